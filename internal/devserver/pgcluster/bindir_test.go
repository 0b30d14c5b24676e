package pgcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestVersionedBinDirsNewestFirst(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"9.6", "15", "10", "not-a-version", "13"} {
		if err := os.MkdirAll(filepath.Join(root, v, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got := versionedBinDirs(root)
	var want []string
	for _, v := range []string{"15", "13", "10", "9.6"} {
		want = append(want, filepath.Join(root, v, "bin"))
	}
	if !slices.Equal(got, want) {
		t.Errorf("versionedBinDirs = %v, want %v", got, want)
	}
}

func TestFindBinDirExplicitMissing(t *testing.T) {
	dir := t.TempDir()
	_, err := FindBinDir(context.Background(), dir)
	if !errors.Is(err, ErrNoServerBinaries) || !strings.Contains(err.Error(), dir) {
		t.Errorf("FindBinDir(%s) err = %v, want ErrNoServerBinaries naming the dir", dir, err)
	}
}

// TestFindBinDirEnvIsStrict checks that a wrong $FENCEGW_PG_BINDIR is an
// error rather than a silent fallback to some other installation.
func TestFindBinDirEnvIsStrict(t *testing.T) {
	t.Setenv(BinDirEnv, t.TempDir())
	_, err := FindBinDir(context.Background(), "")
	if !errors.Is(err, ErrNoServerBinaries) || !strings.Contains(err.Error(), BinDirEnv) {
		t.Errorf("err = %v, want ErrNoServerBinaries naming %s", err, BinDirEnv)
	}
}

func TestFindBinDirAutodetect(t *testing.T) {
	dir, err := FindBinDir(context.Background(), "")
	if err != nil {
		t.Fatalf("FindBinDir: %v", err)
	}
	if err := checkBinDir(dir); err != nil {
		t.Errorf("autodetected %s: %v", dir, err)
	}
	t.Logf("autodetected %s", dir)
}
