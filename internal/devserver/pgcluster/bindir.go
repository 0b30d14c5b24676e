package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrNoServerBinaries is wrapped when no directory holding initdb and
// postgres can be found.
var ErrNoServerBinaries = errors.New("pgcluster: PostgreSQL server binaries not found")

// BinDirEnv names the environment variable that overrides binary discovery.
const BinDirEnv = "FENCEGW_PG_BINDIR"

// debianRoot is where Debian/Ubuntu packages install one bin dir per major version.
const debianRoot = "/usr/lib/postgresql"

// FindBinDir returns the directory holding initdb and postgres: explicit if
// non-empty, else $FENCEGW_PG_BINDIR, else `pg_config --bindir`, else the
// newest /usr/lib/postgresql/*/bin. An explicit or environment choice that
// lacks the binaries is an error rather than silently falling through, so a
// typo does not end up running some other version.
func FindBinDir(ctx context.Context, explicit string) (string, error) {
	if explicit != "" {
		if err := checkBinDir(explicit); err != nil {
			return "", fmt.Errorf("find bindir: Options.BinDir: %w", err)
		}
		return explicit, nil
	}
	if env := os.Getenv(BinDirEnv); env != "" {
		if err := checkBinDir(env); err != nil {
			return "", fmt.Errorf("find bindir: $%s: %w", BinDirEnv, err)
		}
		return env, nil
	}

	var tried []string
	if dir, err := pgConfigBinDir(ctx); err != nil {
		tried = append(tried, fmt.Sprintf("pg_config --bindir (%v)", err))
	} else if err := checkBinDir(dir); err != nil {
		tried = append(tried, fmt.Sprintf("pg_config --bindir = %s (%v)", dir, err))
	} else {
		return dir, nil
	}

	dirs := versionedBinDirs(debianRoot)
	for _, dir := range dirs {
		if checkBinDir(dir) == nil {
			return dir, nil
		}
	}
	if len(dirs) == 0 {
		tried = append(tried, debianRoot+"/*/bin (none found)")
	} else {
		tried = append(tried, strings.Join(dirs, ", ")+" (initdb or postgres missing)")
	}
	return "", fmt.Errorf("find bindir: %w; tried $%s (unset), %s; install the PostgreSQL server package (apt-get install postgresql)",
		ErrNoServerBinaries, BinDirEnv, strings.Join(tried, ", "))
}

// checkBinDir reports whether dir holds executable initdb and postgres.
func checkBinDir(dir string) error {
	for _, name := range []string{"initdb", "postgres"} {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrNoServerBinaries, p, err)
		}
		if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("%w: %s is not an executable file", ErrNoServerBinaries, p)
		}
	}
	return nil
}

func pgConfigBinDir(ctx context.Context) (string, error) {
	path, err := exec.LookPath("pg_config")
	if err != nil {
		return "", errors.New("not on PATH")
	}
	// pg_config is a tiny local program; bound it anyway so a broken
	// wrapper script cannot hang startup.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--bindir").Output()
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// versionedBinDirs lists root/<version>/bin, newest version first. Versions
// compare numerically so that 10 sorts above 9.6.
func versionedBinDirs(root string) []string {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	type cand struct {
		ver []int
		dir string
	}
	var cands []cand
	for _, e := range entries {
		ver, ok := parseVersion(e.Name())
		if !ok {
			continue
		}
		cands = append(cands, cand{ver, filepath.Join(root, e.Name(), "bin")})
	}
	slices.SortFunc(cands, func(a, b cand) int { return slices.Compare(b.ver, a.ver) })
	dirs := make([]string, len(cands))
	for i, c := range cands {
		dirs[i] = c.dir
	}
	return dirs
}

func parseVersion(s string) ([]int, bool) {
	var ver []int
	for part := range strings.SplitSeq(s, ".") {
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return nil, false
		}
		ver = append(ver, n)
	}
	return ver, len(ver) > 0
}
