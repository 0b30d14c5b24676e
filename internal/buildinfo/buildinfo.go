// Package buildinfo says which fencegw a binary is: its module version and
// the VCS revision it was built from, as the Go toolchain recorded them.
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Info identifies a build. Fields the toolchain did not record (a test
// binary, a build outside a checkout) are "unknown".
type Info struct {
	Version   string `json:"version"`  // the main module's version, "(devel)" for a checkout
	Revision  string `json:"revision"` // the VCS commit
	Time      string `json:"time"`     // the commit's time
	Modified  bool   `json:"modified"` // built from a working tree with changes
	GoVersion string `json:"go_version"`
}

// revision, if set at link time (-ldflags -X, as the Dockerfile does for a
// build without .git), names the VCS commit instead of the toolchain.
var revision string

// Read returns this binary's build information.
func Read() Info {
	info := fromToolchain()
	if revision != "" {
		info.Revision = revision
	}
	return info
}

// fromToolchain is what the Go toolchain recorded in the binary.
func fromToolchain() Info {
	info := Info{Version: "unknown", Revision: "unknown", Time: "unknown", GoVersion: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.GoVersion = bi.GoVersion
	if bi.Main.Version != "" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the line `fencegw --version` prints.
func (i Info) String() string {
	modified := ""
	if i.Modified {
		modified = ", modified"
	}
	built := ""
	if i.Time != "unknown" {
		built = ", " + i.Time
	}
	return fmt.Sprintf("fencegw %s (revision %s%s%s, %s)", i.Version, i.Revision, modified, built, i.GoVersion)
}
