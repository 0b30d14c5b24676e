// Package python_test runs the Python client's unit tests from go test,
// so that the suite's one command runs them too.
package python_test

import (
	"os/exec"
	"testing"
)

// TestPythonUnitTests runs python3 -m unittest in clients/python: the
// client's parsers (fuzzed, bounded), its retry rules and its lease's
// life against answers the tests script, and the bad input of issue 35.
// A missing python3 fails it.
func TestPythonUnitTests(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is not installed: the Python client's tests cannot run (.ci/run installs it)")
	}
	cmd := exec.Command("python3", "-X", "dev", "-m", "unittest", "-v")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
