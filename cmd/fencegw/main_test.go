package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

func TestMain(m *testing.M) {
	// The lock tests run this binary as the command under `fencegw lock`.
	if os.Getenv(writerEnv) != "" {
		os.Exit(writerMain())
	}
	os.Exit(run(m))
}

// run runs the tests with FENCEGW_TOKEN_KEK_FILE naming the test binary's
// KEK file: the commands that open signing keys (serve, keys) read it
// there unless a test says otherwise, as a deployment's environment
// would; serve's tests that call serve directly set it in serveConfigFor.
func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "fencegw-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	path, err := testenv.WriteKEKFile(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Setenv("FENCEGW_TOKEN_KEK_FILE", path)
	return testenv.Run(m)
}
