package buildinfo

import (
	"runtime"
	"strings"
	"testing"

	"github.com/fencegw/fencegw"
)

// TestRead: a test binary knows its Go version; whatever the toolchain did
// not record reads "unknown", never empty.
func TestRead(t *testing.T) {
	i := Read()
	if i.GoVersion != runtime.Version() {
		t.Errorf("GoVersion = %q, want %q", i.GoVersion, runtime.Version())
	}
	for name, v := range map[string]string{"version": i.Version, "revision": i.Revision, "time": i.Time} {
		if v == "" {
			t.Errorf("%s is empty", name)
		}
	}
	if s := i.String(); !strings.HasPrefix(s, "fencegw "+fencegw.Version()+" ") || !strings.Contains(s, i.Revision) {
		t.Errorf("String() = %q", s)
	}
	if i.Version != fencegw.Version() || i.ModuleVersion == "" {
		t.Errorf("Version %q, module version %q: want VERSION's %q, and the toolchain's", i.Version, i.ModuleVersion, fencegw.Version())
	}
}
