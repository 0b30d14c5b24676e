package testenv

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fencegw/fencegw/kek"
)

// kekFile is the test binary's KEK file: the authorities of one binary
// share its etcd, and so the signing keys sealed there.
var kekFile = sync.OnceValue(kek.New)

// KEK is the test binary's key-encryption keys, for an authority
// (authority.NewEtcd) made in the test.
func KEK() *kek.Ring {
	r, err := kek.Parse(kekFile())
	if err != nil {
		panic(err) // kek.New's file always parses
	}
	return r
}

// KEKFile writes the test binary's KEK file into a folder of the test's,
// readable by its owner only, for a gateway or command given
// --token-kek-file, and returns its path.
func KEKFile(t testing.TB) string {
	t.Helper()
	path, err := WriteKEKFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// WriteKEKFile writes the test binary's KEK file into dir, readable by
// its owner only, and returns its path: for a TestMain, before any test.
func WriteKEKFile(dir string) (string, error) {
	path := filepath.Join(dir, "token.kek")
	return path, os.WriteFile(path, kekFile(), 0o600)
}
