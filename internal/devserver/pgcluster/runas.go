package pgcluster

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrNoRunAsUser is wrapped when running as root and neither the postgres nor
// the nobody user exists to run the server as.
var ErrNoRunAsUser = errors.New("pgcluster: no unprivileged user to run PostgreSQL as")

// runAsUser is the unprivileged identity for initdb and postgres, which both
// refuse to run as root.
type runAsUser struct {
	name     string
	uid, gid uint32
}

// lookupRunAs returns nil when the current process is not root, since then
// the binaries can run as ourselves.
func lookupRunAs() (*runAsUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var errs []error
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err := errors.Join(err1, err2); err != nil {
			errs = append(errs, fmt.Errorf("user %s: %w", name, err))
			continue
		}
		return &runAsUser{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("lookup run-as user: %w: %w", ErrNoRunAsUser, errors.Join(errs...))
}

// chown gives the run-as user the directories we created so initdb can
// write into them; a nil user means no change is needed.
func (u *runAsUser) chown(paths ...string) error {
	if u == nil {
		return nil
	}
	for _, p := range paths {
		if err := os.Chown(p, int(u.uid), int(u.gid)); err != nil {
			return fmt.Errorf("chown %s to %s: %w", p, u.name, err)
		}
	}
	return nil
}

// reachHint explains the usual cause of a permission failure when running as
// root: an ancestor of dir that the run-as user cannot enter. It returns ""
// unless err or the server output points at permissions.
func (u *runAsUser) reachHint(dir string, err error, output string) string {
	if u == nil || !(errors.Is(err, os.ErrPermission) || strings.Contains(output, "ermission denied")) {
		return ""
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return fmt.Sprintf(" (running as root, so PostgreSQL runs as user %q; every directory above %s must be searchable by it)", u.name, abs)
}
