// Package typescript_test runs the TypeScript client's unit tests from go
// test, so that the suite's one command builds and runs them too.
package typescript_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/fencegw/fencegw/internal/harness/tsclient"
)

// TestTypeScriptUnitTests builds the client (npm ci, tsc) and runs its
// unit tests with node's own runner: its parsers (fuzzed, bounded), its
// retry rules and its lease's life against answers the tests script, and
// the bad input of issue 35. A missing node or npm fails it.
func TestTypeScriptUnitTests(t *testing.T) {
	dir := tsclient.Build(t)
	files, err := filepath.Glob(filepath.Join(dir, "build", "test", "*.test.js"))
	if err != nil || len(files) < 6 {
		t.Fatalf("the unit tests built: %v (%v); want the seven of test/", files, err)
	}
	cmd := exec.Command("node", append([]string{"--test"}, files...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
