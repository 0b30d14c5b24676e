package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrConfig is wrapped by every error of Config.Check.
var ErrConfig = errors.New("bench: bad configuration")

// Config is one run of the benchmark matrix: every client count with every
// distribution.
type Config struct {
	// DatabaseURL is the PostgreSQL the writes go to, on both paths.
	DatabaseURL string
	// EtcdEndpoints serve the in-process gateway's leases and tokens; with
	// GatewayURL, the running gateway's etcd, whose signing keys give each
	// account its token.
	EtcdEndpoints []string
	// DialEtcd, if set, is the client of EtcdEndpoints, with whatever TLS
	// and user they want; nil dials them in plaintext.
	DialEtcd func(context.Context) (*clientv3.Client, error)
	// KEKFile opens the signing keys of EtcdEndpoints (the running
	// gateway's --token-kek-file); "", with EtcdInProcess only: a new KEK
	// of the run's own, in a temporary file it removes.
	KEKFile string
	// EtcdInProcess says that etcd runs in this process, so that its
	// background work counts in the allocation and RSS figures.
	EtcdInProcess bool
	// GatewayURL drives a running gateway instead of one in this process.
	// It must be on loopback, write to DatabaseURL and load Dir's policy.
	GatewayURL string
	// Dir holds policy.yaml and migrations/ (testdata/bench).
	Dir string

	// Replicas, if positive, runs the gateway as that many `fencegw
	// serve` processes on loopback, started for each cell, and spreads
	// the load's connections over them round-robin (target.go); 0: the
	// gateway runs in this process.
	Replicas int
	// Binary is the fencegw the replicas run; "": this executable.
	Binary string
	// ReplicaArgs are more flags for every replica's serve (etcd's TLS
	// files and user).
	ReplicaArgs []string
	// GatewayPID is GatewayURL's process, whose memory the report gives;
	// 0: unknown, no memory figures.
	GatewayPID int
	// IdleConnections, if positive, opens that many keep-alive
	// connections to the gateway in each cell before it is measured,
	// each after one request, held idle until the cell ends; the report
	// gives the gateway's RSS before and with them (idle.go).
	IdleConnections int
	// Wrk also loads each cell's gateway with wrk, an outside load
	// generator, on as many connections as the cell's clients, with the
	// same accounts, tokens and bodies (wrk.go).
	Wrk bool
	// WrkBinary is the wrk to run; "": wrk on $PATH.
	WrkBinary string

	Clients  []int
	Dists    []Dist
	Duration time.Duration // measured, per path and cell
	Warmup   time.Duration // run but not measured, before Duration
	// Rate, if positive, makes the clients open-loop: together they send
	// this many writes per second on a fixed schedule, whatever the
	// answers' speed; a write held up by a slow one before it is timed
	// from when it was due.
	// 0: closed loop, each client sends its next write when answered.
	Rate float64
	// MinWrites makes each path of each cell measure at least this many
	// writes, running past Duration if it must: a short window on a busy
	// machine then measures a slow path instead of nothing.
	MinWrites int64

	// NoCoalesce turns hot-key coalescing off for the in-process gateway,
	// whatever the policy says: the other half of the comparison that
	// decided its default.
	NoCoalesce bool
	// NoGroupCommit turns group commit across resources off in the
	// in-process gateway, whatever the policy says.
	NoGroupCommit bool
	// WriteTransactions bounds the in-process gateway's transactions in
	// flight (gateway.Config.MaxWriteTransactions); 0: its default.
	WriteTransactions int

	// NoPgbench skips the yardstick: pgbench running the same fenced
	// write as one statement, a connection per client.
	NoPgbench bool

	// FenceRows and IdempotencyRows, if positive, top the gateway's fence
	// table and idempotency table up to that many rows of resources and
	// keys the run does not use, before the first cell (prefill.go): the
	// writes then run beside the state past work left.
	FenceRows, IdempotencyRows int64

	// PoolMaxConns is pgx's pool size on both paths; 0 means
	// min(4×GOMAXPROCS, clients) per cell.
	PoolMaxConns int

	// Logger receives the in-process gateway's log; nil discards it.
	Logger *slog.Logger
	// Progress, if set, gets one line per cell as the run goes.
	Progress io.Writer
}

// Check reports the first problem with c.
func (c *Config) Check() error {
	switch {
	case c.DatabaseURL == "":
		return fmt.Errorf("%w: no database URL", ErrConfig)
	case len(c.EtcdEndpoints) == 0:
		return fmt.Errorf("%w: no etcd endpoints (the in-process gateway's, or the running gateway's)", ErrConfig)
	case c.KEKFile == "" && !c.EtcdInProcess:
		// A KEK of the run's own would seal the first key of an etcd
		// without keys under a KEK gone with the run: its gateways could
		// never open it.
		return fmt.Errorf("%w: an etcd the bench does not run needs its gateways' KEK file (--token-kek-file)", ErrConfig)
	}
	return c.CheckLoad()
}

// CheckLoad reports the first problem with the load alone: the matrix,
// the durations, the folder and the gateway URL. A command can check its
// flags with it before starting any server.
func (c *Config) CheckLoad() error {
	switch {
	case c.Dir == "":
		return fmt.Errorf("%w: no bench folder (policy.yaml, migrations/)", ErrConfig)
	case len(c.Clients) == 0 || len(c.Dists) == 0:
		return fmt.Errorf("%w: want at least one client count and one distribution", ErrConfig)
	case c.Duration <= 0 || c.Warmup < 0:
		return fmt.Errorf("%w: want a positive duration and a warmup >= 0", ErrConfig)
	case (c.NoCoalesce || c.NoGroupCommit || c.WriteTransactions != 0) && c.GatewayURL != "":
		return fmt.Errorf("%w: --no-coalesce, --no-group-commit and --max-write-transactions are for the in-process gateway; a running one follows its own settings", ErrConfig)
	case c.WriteTransactions < 0:
		return fmt.Errorf("%w: --max-write-transactions must not be negative", ErrConfig)
	case !(c.Rate >= 0 && c.Rate <= maxRate): // NaN too
		return fmt.Errorf("%w: rate %g writes/s: want 0 (closed loop) to %d", ErrConfig, c.Rate, maxRate)
	case c.PoolMaxConns < 0:
		return fmt.Errorf("%w: pool size %d is negative", ErrConfig, c.PoolMaxConns)
	case c.FenceRows < 0 || c.IdempotencyRows < 0 || c.FenceRows > maxPrefill || c.IdempotencyRows > maxPrefill:
		return fmt.Errorf("%w: --fence-rows %d, --idempotency-rows %d: want 0 to %d each", ErrConfig, c.FenceRows, c.IdempotencyRows, int64(maxPrefill))
	}
	for _, n := range c.Clients {
		if n < 1 || n > maxClients {
			return fmt.Errorf("%w: %d clients: want 1 to %d", ErrConfig, n, maxClients)
		}
		if c.Rate > 0 && c.Rate < float64(n) {
			return fmt.Errorf("%w: rate %g writes/s for %d clients: want at least one write per second per client", ErrConfig, c.Rate, n)
		}
	}
	if err := c.checkTarget(); err != nil {
		return err
	}
	if c.GatewayURL != "" {
		_, err := gatewayAddr(c.GatewayURL)
		return err
	}
	return nil
}

// maxPrefill bounds the rows pre-filled per table: a slip of the finger
// should not fill the disk.
const maxPrefill = 100_000_000

// maxClients bounds one cell's goroutines and connections.
const maxClients = 1024

// maxRate bounds an open-loop run's offered load: far above what one
// machine's PostgreSQL commits, so it limits mistakes, not measurements.
const maxRate = 1_000_000

// poolSize is the pgx pool size of a cell with n clients: more connections
// than clients are never used, and more than a few per core only queue
// inside PostgreSQL instead of in the pool.
func (c *Config) poolSize(n int) int {
	if c.PoolMaxConns > 0 {
		return c.PoolMaxConns
	}
	return min(4*runtime.GOMAXPROCS(0), n)
}

// gatewayAddr returns the host:port of a gateway URL, refusing to aim the
// load anywhere but this machine (a benchmark pointed at a shared gateway by
// mistake is an outage) and anything but plain HTTP, which is what the load
// generator speaks.
func gatewayAddr(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
		return "", fmt.Errorf("%w: gateway URL %q: want http://127.0.0.1:PORT", ErrConfig, raw)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", fmt.Errorf("%w: gateway %s is not on loopback: the benchmark only loads this machine", ErrConfig, host)
	}
	return net.JoinHostPort(host, cmp.Or(u.Port(), "80")), nil
}

// ParseClients parses a comma-separated list of client counts: "1,4,16,64".
func ParseClients(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > maxClients {
			return nil, fmt.Errorf("%w: client count %q: want 1 to %d", ErrConfig, f, maxClients)
		}
		out = append(out, n)
	}
	return out, nil
}

// ParseDists parses a comma-separated list of distributions: "uniform,hot,zipf".
func ParseDists(s string) ([]Dist, error) {
	var out []Dist
	for _, f := range strings.Split(s, ",") {
		d := Dist(strings.TrimSpace(f))
		switch d {
		case Uniform, Hot, Zipf:
			out = append(out, d)
		default:
			return nil, fmt.Errorf("%w: distribution %q: want uniform, hot or zipf", ErrConfig, f)
		}
	}
	return out, nil
}

// window is what each path of each cell runs for.
func (c *Config) window() window {
	return window{warmup: c.Warmup, duration: c.Duration, rate: c.Rate, minWrites: c.MinWrites}
}
