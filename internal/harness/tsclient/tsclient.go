// Package tsclient builds the TypeScript client (clients/typescript) for the
// tests that run it (its unit tests, its conformance runner, the refund
// example) and for `fencegw bench --client-libraries`. The build is the one a developer runs
// (npm ci, then tsc), into the package's own ignored folders
// (node_modules/, build/), so that `go test ./...` stays the one command:
// npm ci only when package-lock.json changed since the last one (npm's cache
// serves it offline), tsc incremental. Concurrent test binaries take turns
// under a file lock.
package tsclient

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Build builds the client and returns its folder (absolute), or fails the
// test: node or npm missing fails it, never skips it.
func Build(t testing.TB) string {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	for _, prog := range []string{"node", "npm"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Fatalf("%s is not installed: the TypeScript client cannot be built (.ci/run installs nodejs and npm)", prog)
		}
	}
	if err := build(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// BuildClient is Build for a program: the client's folder, or why it could
// not be built.
func BuildClient() (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	for _, prog := range []string{"node", "npm"} {
		if _, err := exec.LookPath(prog); err != nil {
			return "", fmt.Errorf("tsclient: %s is not installed: the TypeScript client cannot be built", prog)
		}
	}
	return dir, build(dir)
}

// BuildDependent builds the client, then the package in dir that depends
// on it (an example: "fencegw": "file:…/clients/typescript" in its
// package.json), the same way, and returns dir made absolute.
func BuildDependent(t testing.TB, dir string) string {
	t.Helper()
	Build(t)
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := build(abs); err != nil {
		t.Fatal(err)
	}
	return abs
}

// Dir is clients/typescript of the module this test runs in.
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "clients", "typescript"), nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("tsclient: no go.mod above " + wd)
		}
	}
}

func build(dir string) error {
	lock, err := os.OpenFile(filepath.Join(dir, ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("tsclient: lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing unlocks too

	lockfile, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(lockfile)
	want := []byte(hex.EncodeToString(sum[:]))
	stamp := filepath.Join(dir, "node_modules", ".fencegw-lock-sha256")
	if got, err := os.ReadFile(stamp); err != nil || !bytes.Equal(got, want) {
		// --ignore-scripts: the compiler and its types need none.
		if err := run(dir, "npm", "ci", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"); err != nil {
			return err
		}
		if err := os.WriteFile(stamp, want, 0o644); err != nil {
			return err
		}
	}
	return run(dir, "node", filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", ".")
}

func run(dir string, argv ...string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%q in %s: %w\n%s", argv, dir, err, out)
	}
	return nil
}
