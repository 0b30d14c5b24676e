package fencegw_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/fencegw/fencegw"
)

// semver is a semantic version (semver.org), without a leading v.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// TestVersionIsOneEverywhere: VERSION is a semantic version, and every
// client's package says the same: the TypeScript package (package.json,
// its lock file, src/version.ts) and the Python one (pyproject.toml,
// fencegw/_version.py). The gateway and the Go client read VERSION itself.
func TestVersionIsOneEverywhere(t *testing.T) {
	v := fencegw.Version()
	if !semver.MatchString(v) {
		t.Fatalf("VERSION %q is not a semantic version", v)
	}
	var pkg, lock struct {
		Version  string `json:"version"`
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	var example struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	readJSON(t, "clients/typescript/package.json", &pkg)
	readJSON(t, "clients/typescript/package-lock.json", &lock)
	readJSON(t, "examples/refund/typescript/package-lock.json", &example)
	for _, c := range []struct{ where, got string }{
		{"clients/typescript/package.json", pkg.Version},
		{"clients/typescript/package-lock.json", lock.Version},
		{"clients/typescript/package-lock.json (its root package)", lock.Packages[""].Version},
		{"examples/refund/typescript/package-lock.json (the client it links)", example.Packages["../../../clients/typescript"].Version},
		{"clients/typescript/src/version.ts", find(t, "clients/typescript/src/version.ts", `VERSION = "([^"]*)"`)},
		{"clients/python/pyproject.toml", find(t, "clients/python/pyproject.toml", `(?m)^version = "([^"]*)"`)},
		{"clients/python/fencegw/_version.py", find(t, "clients/python/fencegw/_version.py", `__version__ = "([^"]*)"`)},
	} {
		if c.got != v {
			t.Errorf("%s says %q, VERSION %q", c.where, c.got, v)
		}
	}
}

// TestChangelog: CHANGELOG.md keeps the Keep a Changelog shape: an
// Unreleased section first, then one per version, newest first, none
// above VERSION's; each section's changes under Added, Changed,
// Deprecated, Removed, Fixed or Security.
func TestChangelog(t *testing.T) {
	b, err := os.ReadFile("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !strings.HasPrefix(text, "# Changelog\n") || !strings.Contains(text, "https://keepachangelog.com/") || !strings.Contains(text, "https://semver.org/") {
		t.Error("CHANGELOG.md does not start as Keep a Changelog does (# Changelog, its link and Semantic Versioning's)")
	}
	sections := regexp.MustCompile(`(?m)^## \[([^\]]+)\](.*)$`).FindAllStringSubmatch(text, -1)
	if len(sections) == 0 || sections[0][1] != "Unreleased" {
		t.Fatalf("sections %q: want [Unreleased] first", sections)
	}
	for _, s := range sections[1:] {
		if !semver.MatchString(s[1]) || !regexp.MustCompile(`^ - \d{4}-\d{2}-\d{2}$`).MatchString(s[2]) {
			t.Errorf("section %q: want ## [X.Y.Z] - YYYY-MM-DD", s[0])
		}
	}
	for _, h := range regexp.MustCompile(`(?m)^### (.*)$`).FindAllStringSubmatch(text, -1) {
		switch h[1] {
		case "Added", "Changed", "Deprecated", "Removed", "Fixed", "Security":
		default:
			t.Errorf("### %s: not a kind of change Keep a Changelog names", h[1])
		}
	}
	unreleased := text[strings.Index(text, "## [Unreleased]"):]
	if len(sections) > 1 {
		unreleased = unreleased[:strings.Index(unreleased, "## ["+sections[1][1]+"]")]
	}
	if !strings.Contains(unreleased, "\n- ") {
		t.Error("the Unreleased section lists no change")
	}
}

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func find(t *testing.T, name, pattern string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(pattern).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no %s", name, pattern)
	}
	return string(m[1])
}
