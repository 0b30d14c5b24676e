// Package buildinfo says which fencegw a binary is: the version of the
// tree it was built from (the repository's VERSION file, compiled in), and
// the module version and VCS revision as the Go toolchain recorded them.
package buildinfo

import (
	"fmt"
	"runtime/debug"

	"github.com/fencegw/fencegw"
)

// Info identifies a build. Fields the toolchain did not record (a test
// binary, a build outside a checkout) are "unknown".
type Info struct {
	// Version is the semantic version users name: VERSION at the root of
	// the tree built, so a build from a checkout says it too, never
	// "(devel)".
	Version       string `json:"version"`
	ModuleVersion string `json:"module_version"` // the toolchain's: a tag (v0.1.0), or "(devel)" for a checkout
	Revision      string `json:"revision"`       // the VCS commit
	Time          string `json:"time"`           // the commit's time
	Modified      bool   `json:"modified"`       // built from a working tree with changes
	GoVersion     string `json:"go_version"`
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
	info := Info{Version: fencegw.Version(), ModuleVersion: "unknown", Revision: "unknown", Time: "unknown", GoVersion: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.GoVersion = bi.GoVersion
	if bi.Main.Version != "" {
		info.ModuleVersion = bi.Main.Version
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
