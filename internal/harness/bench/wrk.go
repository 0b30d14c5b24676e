package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/fencegw/fencegw/internal/clip"
)

// wrkGrace is how long a wrk run may outlast its duration before it is
// killed: it stops on time by itself, so only a hung one is.
const wrkGrace = 30 * time.Second

// findWrk returns the wrk a run with Wrk set uses, or why there is none.
func findWrk(cfg Config) (string, error) {
	bin, err := exec.LookPath(cmp.Or(cfg.WrkBinary, "wrk"))
	if err != nil {
		return "", fmt.Errorf("bench: --wrk: %w (Debian and Ubuntu: apt-get install wrk)", err)
	}
	return bin, nil
}

// runWrk loads the gateway at base with wrk for one cell: n connections,
// the cell's distribution, accounts and tokens (signed[id-1] is account
// id's), an unmeasured run for the warmup, then the measured one. wrk
// counts whole seconds: each run lasts its window rounded up to one.
func (e *env) runWrk(ctx context.Context, base string, n int, d Dist, signed []string) (*WrkPath, error) {
	dir, err := os.MkdirTemp("", "fencegw-wrk-") // this user's only
	if err != nil {
		return nil, fmt.Errorf("bench: wrk: %w", err)
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "cell.lua")
	if err := os.WriteFile(script, []byte(wrkScript(e.work.op.Name, signed, d)), 0o600); err != nil {
		return nil, fmt.Errorf("bench: wrk: %w", err)
	}
	threads := min(runtime.NumCPU(), n)
	if e.cfg.Warmup > 0 {
		if _, err := e.wrkOnce(ctx, script, base, n, threads, e.cfg.Warmup); err != nil {
			return nil, err
		}
	}
	out, err := e.wrkOnce(ctx, script, base, n, threads, e.cfg.Duration)
	if err != nil {
		return nil, err
	}
	if e.cfg.Progress != nil {
		fmt.Fprintf(e.cfg.Progress, "bench: wrk, %d connections, %s:\n%s", n, d, indent(out))
	}
	w, err := parseWrk(out)
	if err != nil {
		return nil, fmt.Errorf("%w; its output:\n%s", err, clip.String(out, 4096))
	}
	w.Connections, w.Threads = n, threads
	return &w, nil
}

// wrkOnce runs wrk for d, killing it if it outlasts d by wrkGrace, and
// returns its output.
func (e *env) wrkOnce(ctx context.Context, script, base string, conns, threads int, d time.Duration) (string, error) {
	secs := max(1, int(math.Ceil(d.Seconds())))
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+wrkGrace)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.wrk, "--threads", strconv.Itoa(threads), "--connections", strconv.Itoa(conns),
		"--duration", strconv.Itoa(secs)+"s", "--timeout", strconv.Itoa(int(requestTimeout.Seconds()))+"s", "--latency",
		"--script", script, base+"/")
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("bench: wrk: %w; its output:\n%s", err, clip.String(out.String(), 4096))
	}
	return out.String(), nil
}

// indent prefixes every line of s with two spaces.
func indent(s string) string {
	lines := strings.SplitAfter(strings.TrimRight(s, "\n"), "\n")
	return "  " + strings.Join(lines, "  ") + "\n"
}
