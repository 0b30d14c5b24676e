// Package fencegw is the repository's word on itself to the code: the
// version of this tree, read from the VERSION file at its root when the
// binary is built. The gateway (`fencegw version`, GET /v1/status, the
// metrics' build label), the Go client and the packages of the Python and
// TypeScript clients all report it; version_test.go holds them equal.
package fencegw

import (
	_ "embed"
	"strings"
)

//go:embed VERSION
var versionFile string

// Version is the semantic version of this tree (VERSION, without the line
// break): the release it is, or the one its changes lead to
// (CHANGELOG.md, Unreleased).
func Version() string { return strings.TrimSpace(versionFile) }
