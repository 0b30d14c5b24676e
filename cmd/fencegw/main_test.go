package main

import (
	"os"
	"testing"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

func TestMain(m *testing.M) {
	// The lock tests run this binary as the command under `fencegw lock`.
	if os.Getenv(writerEnv) != "" {
		os.Exit(writerMain())
	}
	os.Exit(testenv.Run(m))
}
