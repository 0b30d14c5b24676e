package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// ErrInvalid is wrapped by Report.Err when a cell is not a valid
// measurement.
var ErrInvalid = errors.New("bench: invalid cells")

// Report is one run of the matrix.
type Report struct {
	Gateway       string `json:"gateway"` // "in-process", the URL driven, or the replicas
	EtcdInProcess bool   `json:"etcd_in_process"`
	// Replicas is the number of gateway processes the run started for
	// each cell (Cell.Replicas); 0: none, the gateway is Gateway.
	Replicas int `json:"replicas"`
	// Coalesce says whether the in-process gateway coalesced the
	// operation's writes (its resource's policy, or --no-coalesce).
	Coalesce bool `json:"coalesce"`
	// GroupCommit says whether it committed writes of several resources
	// together.
	GroupCommit     bool    `json:"group_commit"`
	Server          Server  `json:"postgresql"`
	GOMAXPROCS      int     `json:"gomaxprocs"`
	Operation       string  `json:"operation"`
	DurationSeconds float64 `json:"duration_seconds"`
	WarmupSeconds   float64 `json:"warmup_seconds"`
	// OfferedRate is the open-loop schedule in writes per second, all
	// clients together; 0 for closed-loop clients.
	OfferedRate float64 `json:"offered_rate,omitempty"`
	// Pgbench says how the yardstick ran, or why it did not.
	Pgbench string `json:"pgbench"`
	// State is the size of the gateway's tables when the first cell
	// started (Config.FenceRows, Config.IdempotencyRows).
	State   State   `json:"state"`
	Cells   []Cell  `json:"cells"`
	Process Process `json:"process"`
}

// Server is the PostgreSQL the writes went to.
type Server struct {
	Version           string `json:"version"`
	Fsync             string `json:"fsync"`
	SynchronousCommit string `json:"synchronous_commit"`
}

// Err is non-nil, wrapping ErrInvalid, when any cell had failed writes or
// none at all on a path.
func (r *Report) Err() error {
	var bad []string
	for _, c := range r.Cells {
		if !c.Valid() {
			bad = append(bad, fmt.Sprintf("%d×%s", c.Clients, c.Dist))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s: a cell with failed writes, or none, measured nothing valid", ErrInvalid, strings.Join(bad, ", "))
	}
	return nil
}

// WriteJSON writes r as one JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes r as a table, one row per cell, then the process's costs.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	where := "in-process on 127.0.0.1 (janitor and authority guard not running)"
	if r.Gateway != "in-process" {
		where = r.Gateway
	}
	loop := "closed-loop clients"
	if r.OfferedRate > 0 {
		loop = fmt.Sprintf("open-loop clients offering %.0f writes/s together (a write held up by the one before is timed from when it was due)", r.OfferedRate)
	}
	fmt.Fprintf(&b, "fencegw bench: %s on loopback, %s measured per path and cell after %s warmup\n",
		loop, seconds(r.DurationSeconds), seconds(r.WarmupSeconds))
	fmt.Fprintf(&b, "  write       fence + %s, one batch, one round trip, one transaction\n", r.Operation)
	if r.Gateway == "in-process" {
		where += ", hot-key coalescing " + onOff(r.Coalesce) + ", group commit " + onOff(r.GroupCommit)
	}
	fmt.Fprintf(&b, "  gateway     %s\n", where)
	fmt.Fprintf(&b, "  direct      the gateway's executor on pgx, same SQL, no HTTP\n")
	fmt.Fprintf(&b, "  pgbench     %s\n", r.Pgbench)
	fmt.Fprintf(&b, "  ceiling     pgbench, the same statement k to a transaction (k: the gateway's mean group in the cell) on its write transactions' count of connections, or twice it, with no more writes in flight than clients: the better\n")
	fmt.Fprintf(&b, "  pgx pool    pool column: min(4×GOMAXPROCS, clients) unless --pool-max-conns; GOMAXPROCS %d\n", r.GOMAXPROCS)
	fmt.Fprintf(&b, "  PostgreSQL  %s, fsync %s, synchronous_commit %s\n", r.Server.Version, r.Server.Fsync, r.Server.SynchronousCommit)
	fmt.Fprintf(&b, "  state       %d fence rows (%s), %d idempotency keys (%s) at the start\n\n",
		r.State.FenceRows, mib(r.State.FenceBytes), r.State.IdempotencyRows, mib(r.State.IdempotencyBytes))

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tdist   \tpool\tdirect tx/s\tgateway tx/s\tratio\tpgbench tx/s\tgw/pgb\tceiling w/s (k×conns)\tgw/ceil\tdirect p50/p99/p999 ms\tgateway p50/p99/p999 ms\tpgbench p50/p99/p999 ms\terrors\t")
	for _, c := range r.Cells {
		pgb, ratio, lat, ceil, ceilRatio := "-", "-", "-", "-", "-"
		if c.Pgbench != nil {
			pgb, ratio, lat = fmt.Sprintf("%.0f", c.Pgbench.TxPerSec), fmt.Sprintf("%.2f", c.PgbenchRatio), percentiles(c.Pgbench.Latency)
		}
		switch {
		case c.Ceiling != nil && c.Ceiling.Error != "":
			ceil = fmt.Sprintf("none (%d×%d: below)", c.Ceiling.GroupSize, c.Ceiling.Sweep[0].Connections)
		case c.Ceiling != nil:
			ceil = fmt.Sprintf("%.0f (%d×%d)", c.Ceiling.WritesPerSec, c.Ceiling.GroupSize, c.Ceiling.Connections)
			ceilRatio = fmt.Sprintf("%.2f", c.CeilingRatio)
		}
		fmt.Fprintf(tw, "%d\t%-7s\t%d\t%.0f\t%.0f\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c.Clients, c.Dist, c.PoolMaxConns,
			c.Direct.TxPerSec, c.Gateway.TxPerSec, c.Ratio, pgb, ratio, ceil, ceilRatio, percentiles(c.Direct.Latency), percentiles(c.Gateway.Latency), lat, errorCell(c))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Cells {
		for _, side := range []struct {
			name string
			p    *Path
		}{{"direct", &c.Direct}, {"gateway", &c.Gateway}, {"pgbench", c.Pgbench}} {
			if side.p != nil && side.p.ErrorCount() > 0 {
				fmt.Fprintf(&b, "  errors, %d×%s %s: %s; first: %s\n", c.Clients, c.Dist, side.name, kinds(side.p.Errors), side.p.FirstError)
			}
		}
		if c.Ceiling != nil && c.Ceiling.Error != "" {
			fmt.Fprintf(&b, "  ceiling, %d×%s: %s\n", c.Clients, c.Dist, c.Ceiling.Error)
		}
	}
	r.writeOverhead(&b)
	r.writeLoad(&b)
	r.writeProcess(&b)
	if err := r.Err(); err != nil {
		fmt.Fprintf(&b, "\nINVALID: %v\n", err)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeOverhead prints each 1-client cell's Overhead.
func (r *Report) writeOverhead(b *strings.Builder) {
	for _, c := range r.Cells {
		o := c.Overhead
		if o == nil {
			continue
		}
		loop := ""
		if r.OfferedRate > 0 {
			loop = ", closed loop"
		}
		fmt.Fprintf(b, "\n1 client %s%s, the paths taking turns, %d writes at a time (%d measured on each), p50 ms:\n", c.Dist, loop, overheadRun, o.PerPath)
		fmt.Fprintf(b, "  direct %s, HTTP floor %s (%s: net/http around the same write), gateway %s (%s); the gateway's own %s\n",
			ms(o.Direct.P50), ms(o.Floor.P50), delta(o.FloorP50), ms(o.Gateway.P50), delta(o.GatewayP50), delta(o.OwnP50))
		if len(o.Errors) > 0 {
			fmt.Fprintf(b, "  errors: %s; first: %s\n", kinds(o.Errors), o.FirstError)
		}
	}
}

func (r *Report) writeProcess(b *strings.Builder) {
	p := r.Process
	fmt.Fprintf(b, "\nheap allocations per write, whole process, measured windows only:\n")
	if g := p.GatewayPath; g != nil {
		fmt.Fprintf(b, "  gateway path           %s  (gateway + this load generator's HTTP client)\n", allocs(*g))
		fmt.Fprintf(b, "  empty HTTP round trip  %s  (same client, net/http server, a handler doing nothing)\n", allocs(p.EmptyHTTP))
		fmt.Fprintf(b, "  gateway's own          %s  (gateway path − empty round trip: routing, JSON, validation, executor, pgx)\n",
			allocs(Allocs{Objects: g.Objects - p.EmptyHTTP.Objects, Bytes: g.Bytes - p.EmptyHTTP.Bytes}))
	} else {
		fmt.Fprintf(b, "  gateway path           n/a (the gateway is another process)\n")
	}
	fmt.Fprintf(b, "  direct path            %s  (executor + pgx)\n", allocs(p.DirectPath))
	fmt.Fprintf(b, "empty HTTP round trip, 1 client, p50/p99/p999 ms: %s (loopback HTTP alone, part of every gateway latency)\n", percentiles(p.EmptyHTTPLatency))
	if p.RSSBytes > 0 {
		what := "gateway, load generator"
		if r.EtcdInProcess {
			what += ", embedded etcd"
		}
		fmt.Fprintf(b, "RSS %s at the end, %s peak: this whole process (%s; PostgreSQL not included)\n",
			mib(p.RSSBytes), mib(p.PeakRSSBytes), what)
	} else {
		fmt.Fprintf(b, "RSS n/a\n")
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func percentiles(p Percentiles) string {
	return ms(p.P50) + " / " + ms(p.P99) + " / " + ms(p.P999)
}

// ms prints a latency in milliseconds with about three significant digits.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 1:
		return fmt.Sprintf("%.3f", v)
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// delta prints a difference of latencies with its sign.
func delta(d time.Duration) string {
	if d < 0 {
		return "-" + ms(-d)
	}
	return "+" + ms(d)
}

func errorCell(c Cell) string {
	d, g, o := c.Direct.ErrorCount(), c.Gateway.ErrorCount(), c.Overhead.ErrorCount()
	switch {
	case d == 0 && g == 0 && o == 0 && !c.Valid():
		return "no writes"
	case d == 0 && g == 0 && o == 0:
		return "0"
	case o == 0:
		return fmt.Sprintf("direct %d, gateway %d", d, g)
	}
	return fmt.Sprintf("direct %d, gateway %d, overhead %d", d, g, o)
}

func kinds(m map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func allocs(a Allocs) string {
	return fmt.Sprintf("%6.1f allocs %8.0f B", a.Objects, a.Bytes)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).String()
}
