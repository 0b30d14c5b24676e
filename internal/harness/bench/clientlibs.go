package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// ClientDriver writes through one client library, or its language's bare
// HTTP call of the same request, for `fencegw bench --client-libraries`.
//
// A driver other than Go's is a program of the client's language, started
// once per cell as
//
//	ARGV... --gateway URL --path PATH --writers N --first-account K --warmup-ms W --duration-ms D
//
// It takes a lease on each of acct/K … acct/K+N-1 through its client,
// then runs N writers at once, each writing `add` {id, amount: 1} on its
// account in a closed loop, each write under a new Idempotency-Key, as the
// client sends it; for W ms unmeasured, then D ms measured: a write that
// starts in the window counts. It releases the leases and prints one JSON
// object on stdout: {"writes", "errors", "seconds", "latencies_us": [each
// measured write's]}. Go's driver runs in this process (clientlibs_go.go).
type ClientDriver struct {
	Language string // go, python, typescript
	// Path is "client" (the library) or the bare call: "bare", or
	// "bare-fetch" (Node's fetch beside its node:http).
	Path string
	// Argv starts the driver; nil for Go's.
	Argv []string
	Dir  string // its working directory
}

func (d ClientDriver) name() string { return d.Language + " " + d.Path }

// ClientReport is one run of `fencegw bench --client-libraries`.
type ClientReport struct {
	Gateway         string       `json:"gateway"`
	DurationSeconds float64      `json:"duration_seconds"`
	WarmupSeconds   float64      `json:"warmup_seconds"` // before each run
	Rounds          int          `json:"rounds"`         // runs of each driver per writer count
	Cells           []ClientCell `json:"cells"`
}

// ClientCell is one driver at one number of writers.
type ClientCell struct {
	Language string      `json:"language"`
	Path     string      `json:"path"`
	Writers  int         `json:"writers"`
	Writes   int64       `json:"writes"`
	Errors   int64       `json:"errors"`
	TxPerSec float64     `json:"writes_per_sec"`
	Latency  Percentiles `json:"latency"`
	// OverBare is this client's writes per second over its language's
	// bare call's ("bare") at the same writers; 0 for the bare calls.
	OverBare float64 `json:"client_over_bare,omitempty"`
}

// RunClientLibraries measures fenced writes through each driver against
// one gateway (Config.Replicas processes, or this process's), at each of
// Config.Clients writers, on distinct accounts. Each driver runs rounds
// times per writer count, Config.Duration split among its runs, the
// drivers interleaved and their order turned each round, so that a
// machine busy with other work slows each driver alike rather than
// whichever ran at the wrong moment; a cell is its runs together. ctx ends
// the run early, with an error.
func RunClientLibraries(ctx context.Context, cfg Config, drivers []ClientDriver, rounds int) (*ClientReport, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.Wrk || cfg.IdleConnections > 0 || cfg.Rate > 0 {
		return nil, fmt.Errorf("%w: --client-libraries runs closed-loop writers only: no --wrk, --idle-connections or --rate", ErrConfig)
	}
	if rounds < 1 || cfg.Duration/time.Duration(rounds) < 100*time.Millisecond {
		return nil, fmt.Errorf("%w: %d rounds of %s: want at least one, each of 100 ms or more", ErrConfig, rounds, cfg.Duration)
	}
	e, err := setup(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.close()
	most := 0
	for _, n := range cfg.Clients {
		most = max(most, n)
	}
	t, err := e.startTarget(ctx, cfg.poolSize(most))
	if err != nil {
		return nil, err
	}
	defer t.close() //nolint:errcheck // the report is what matters; a replica that will not stop is killed
	url := t.urls[0]
	rep := &ClientReport{Gateway: gatewayName(cfg), DurationSeconds: cfg.Duration.Seconds(), WarmupSeconds: cfg.Warmup.Seconds(), Rounds: rounds}
	for _, n := range cfg.Clients {
		got := make([]driverResult, len(drivers))
		for r := range rounds {
			for k := range drivers {
				i := (k + r) % len(drivers)
				res, err := runDriver(ctx, drivers[i], url, n, cfg.Warmup, cfg.Duration/time.Duration(rounds))
				if err != nil {
					return nil, fmt.Errorf("bench: %s, %d writers: %w", drivers[i].name(), n, err)
				}
				got[i].lat = append(got[i].lat, res.lat...)
				got[i].errors += res.errors
				got[i].seconds += res.seconds
			}
		}
		bare := map[string]float64{}
		for i, d := range drivers {
			res := got[i]
			cell := ClientCell{Language: d.Language, Path: d.Path, Writers: n, Writes: int64(len(res.lat)), Errors: res.errors,
				TxPerSec: float64(len(res.lat)) / res.seconds, Latency: summarize(res.lat)}
			if d.Path == "bare" {
				bare[d.Language] = cell.TxPerSec
			}
			rep.Cells = append(rep.Cells, cell)
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "bench: %-10s %-10s %3d writers  %7.0f writes/s  p50 %s ms  p99 %s ms  errors %d\n",
					d.Language, d.Path, n, cell.TxPerSec, ms(cell.Latency.P50), ms(cell.Latency.P99), cell.Errors)
			}
		}
		for i := range rep.Cells {
			c := &rep.Cells[i]
			if c.Writers == n && c.Path == "client" && bare[c.Language] > 0 {
				c.OverBare = c.TxPerSec / bare[c.Language]
			}
		}
	}
	return rep, nil
}

// driverResult is what one driver measured.
type driverResult struct {
	lat     []time.Duration
	errors  int64
	seconds float64
}

// driverOutput is an outside driver's one line.
type driverOutput struct {
	Writes      int64   `json:"writes"`
	Errors      int64   `json:"errors"`
	Seconds     float64 `json:"seconds"`
	LatenciesUS []int64 `json:"latencies_us"`
}

func runDriver(ctx context.Context, d ClientDriver, url string, writers int, warmup, duration time.Duration) (driverResult, error) {
	if d.Argv == nil {
		return runGoDriver(ctx, d.Path, url, writers, 1, warmup, duration)
	}
	// Generous: the driver's own start and its leases, then the window.
	ctx, cancel := context.WithTimeout(ctx, warmup+duration+2*time.Minute)
	defer cancel()
	argv := append(append([]string(nil), d.Argv...), "--gateway", url, "--path", d.Path, "--writers", strconv.Itoa(writers),
		"--first-account", "1", "--warmup-ms", strconv.FormatInt(warmup.Milliseconds(), 10), "--duration-ms", strconv.FormatInt(duration.Milliseconds(), 10))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = d.Dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return driverResult{}, fmt.Errorf("%q: %w\n%s", argv, err, tailOf(stderr.String()))
	}
	var o driverOutput
	if err := json.Unmarshal(out, &o); err != nil || o.Seconds <= 0 || int64(len(o.LatenciesUS)) != o.Writes {
		return driverResult{}, fmt.Errorf("%q printed %.200q: want its one JSON result (%v)", argv, out, err)
	}
	r := driverResult{errors: o.Errors, seconds: o.Seconds, lat: make([]time.Duration, len(o.LatenciesUS))}
	for i, us := range o.LatenciesUS {
		r.lat[i] = time.Duration(us) * time.Microsecond
	}
	return r, nil
}

func tailOf(s string) string {
	if len(s) > 4096 {
		return "…" + s[len(s)-4096:]
	}
	return s
}

// Err is the first failure the run saw: a driver's write errors.
func (r *ClientReport) Err() error {
	var errs []error
	for _, c := range r.Cells {
		if c.Errors > 0 {
			errs = append(errs, fmt.Errorf("bench: %s %s, %d writers: %d writes failed", c.Language, c.Path, c.Writers, c.Errors))
		}
	}
	return errors.Join(errs...)
}

func (r *ClientReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText prints one row per driver and writer count, each client's
// writes per second over its bare call's beside it.
func (r *ClientReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "fenced writes through each client library and its language's bare HTTP call (gateway: %s; per row %s measured in %d interleaved runs, each after %s of warmup)\n\n",
		r.Gateway, seconds(r.DurationSeconds), r.Rounds, seconds(r.WarmupSeconds))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "language\tpath\twriters\twrites/s\tp50 ms\tp99 ms\tclient/bare\terrors\t")
	for _, c := range r.Cells {
		ratio := ""
		if c.OverBare > 0 {
			ratio = fmt.Sprintf("%.2fx", c.OverBare)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%s\t%s\t%s\t%d\t\n", c.Language, c.Path, c.Writers, c.TxPerSec, ms(c.Latency.P50), ms(c.Latency.P99), ratio, c.Errors)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}
