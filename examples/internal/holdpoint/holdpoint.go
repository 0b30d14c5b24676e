// Package holdpoint is the stories' pause points: it stops an example
// program at an exact point of its work (between its check and its write,
// where the seed's scenarios need a holder paused), so that a user
// following examples/README.md, or a test, can freeze it there (SIGSTOP)
// and resume it later; a sleep would only make that likely. Without the
// environment variable a hold point does nothing.
//
// A process at hold point name writes DIR/PID.name.held (holding "PID
// PPID") and waits until DIR/PID.name.go exists. Once let go, a process
// passes that point freely: the go-file stays. A directory that does not
// exist (yet) holds nobody, so a test can arm hold points later, by
// creating it.
package holdpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Env names the directory of hold points; unset, Here returns at once.
const Env = "FENCEGW_HOLD_DIR"

// Here holds the process at the point called name until the test lets it
// go, for at most a minute.
func Here(name string) {
	dir := os.Getenv(Env)
	if dir == "" {
		return
	}
	base := filepath.Join(dir, strconv.Itoa(os.Getpid())+"."+name)
	if err := os.WriteFile(base+".held", fmt.Appendf(nil, "%d %d", os.Getpid(), os.Getppid()), 0o644); err != nil {
		return
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(base + ".go"); err == nil {
			return
		}
	}
}

// Held is a process waiting at a hold point.
type Held struct {
	Pid, Ppid int
	name, dir string
}

// Waiting lists the processes waiting at hold point name in dir, and
// those let go already.
func Waiting(dir, name string) ([]Held, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*."+name+".held"))
	if err != nil {
		return nil, err
	}
	var out []Held
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			return nil, err
		}
		var h Held
		if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%d %d", &h.Pid, &h.Ppid); err != nil {
			continue // being written
		}
		h.name, h.dir = name, dir
		out = append(out, h)
	}
	return out, nil
}

// Release lets the process go on.
func (h Held) Release() error {
	return os.WriteFile(filepath.Join(h.dir, strconv.Itoa(h.Pid)+"."+h.name+".go"), nil, 0o644)
}

// Released reports whether the process was let go.
func (h Held) Released() bool {
	_, err := os.Stat(filepath.Join(h.dir, strconv.Itoa(h.Pid)+"."+h.name+".go"))
	return err == nil
}
