package bench

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fencegw/fencegw/internal/clip"
)

// ErrWrkOutput is wrapped by parseWrk's errors.
var ErrWrkOutput = errors.New("bench: wrk's output")

// WrkPath is wrk's measurement of one cell: its own figures, as its
// done() function (wrkscript.go) printed them.
type WrkPath struct {
	Connections     int     `json:"connections"`
	Threads         int     `json:"threads"`
	DurationSeconds float64 `json:"duration_seconds"`
	// Requests were answered, whatever their status; Writes were answered
	// below 400, the acknowledged writes.
	Requests     int64   `json:"requests"`
	Writes       int64   `json:"writes"`
	WritesPerSec float64 `json:"writes_per_sec"`
	// Latency is wrk's, from its histogram; P999 is its 99.9th
	// percentile.
	Latency Percentiles `json:"latency"`
	// StatusErrors are answers of status 400 or more: a run with any
	// measured refusals, not writes. SocketErrors are connect, read,
	// write errors and timeouts.
	StatusErrors int64 `json:"status_errors"`
	SocketErrors int64 `json:"socket_errors"`
}

// valid reports whether wrk's run measured writes only; a nil w (no wrk
// run) is valid.
func (w *WrkPath) valid() bool {
	return w == nil || (w.Writes > 0 && w.StatusErrors == 0 && w.SocketErrors == 0)
}

// maxWrkCount bounds every figure of the line: a count of requests, or
// microseconds (11 days); more is not wrk's.
const maxWrkCount = 1e12

// wrkKeys are the fields of the line done() prints, all required.
var wrkKeys = []string{"duration_us", "requests", "status_errors", "connect_errors", "read_errors", "write_errors", "timeouts", "p50_us", "p99_us", "p999_us", "max_us"}

// parseWrk reads wrk's output and returns the figures of its
// "fencegw-wrk" line.
func parseWrk(out string) (WrkPath, error) {
	var w WrkPath
	var line string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "fencegw-wrk "); ok {
			line = rest
		}
	}
	if line == "" {
		return w, fmt.Errorf("%w: no fencegw-wrk line (did the script's done() run?)", ErrWrkOutput)
	}
	v := map[string]int64{}
	for _, f := range strings.Fields(line) {
		key, value, ok := strings.Cut(f, "=")
		n, err := strconv.ParseInt(value, 10, 64)
		if !ok || err != nil || n < 0 || n > maxWrkCount {
			return w, fmt.Errorf("%w: field %q: want key=count, count 0 to %d", ErrWrkOutput, clip.String(f, 40), int64(maxWrkCount))
		}
		if _, dup := v[key]; dup {
			return w, fmt.Errorf("%w: field %q twice", ErrWrkOutput, clip.String(key, 40))
		}
		v[key] = n
	}
	for _, k := range wrkKeys {
		if _, ok := v[k]; !ok {
			return w, fmt.Errorf("%w: no %s", ErrWrkOutput, k)
		}
	}
	if v["duration_us"] == 0 || v["status_errors"] > v["requests"] {
		return w, fmt.Errorf("%w: %d requests, %d refused in %d µs: not a run", ErrWrkOutput, v["requests"], v["status_errors"], v["duration_us"])
	}
	us := func(k string) time.Duration { return time.Duration(v[k]) * time.Microsecond }
	w.DurationSeconds = us("duration_us").Seconds()
	w.Requests, w.StatusErrors = v["requests"], v["status_errors"]
	w.Writes = w.Requests - w.StatusErrors
	w.WritesPerSec = float64(w.Writes) / w.DurationSeconds
	w.SocketErrors = v["connect_errors"] + v["read_errors"] + v["write_errors"] + v["timeouts"]
	w.Latency = Percentiles{P50: us("p50_us"), P99: us("p99_us"), P999: us("p999_us"), Max: us("max_us")}
	return w, nil
}
