package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// LeaseReport is one run of `fencegw bench --leases`.
type LeaseReport struct {
	Gateway         string      `json:"gateway"`
	EtcdInProcess   bool        `json:"etcd_in_process"`
	GOMAXPROCS      int         `json:"gomaxprocs"`
	DurationSeconds float64     `json:"duration_seconds"`
	WarmupSeconds   float64     `json:"warmup_seconds"`
	Cells           []LeaseCell `json:"cells"`
}

// LeaseCell is one shape of lock use measured on both paths.
type LeaseCell struct {
	Clients int `json:"clients"`
	// Dist: uniform, distinct resources but for chance; hot, all on
	// account 1, each cycle handed to the next in line.
	Dist Dist `json:"dist"`
	// Write: a fenced write between acquire and release.
	Write   bool      `json:"write"`
	Gateway LeasePath `json:"gateway"`
	Mutex   LeasePath `json:"etcd_mutex"`
	// Ratio is the gateway's cycles per second over the Mutex's.
	Ratio float64 `json:"gateway_over_mutex"`
}

// LeasePath is one path's cycles: Path's Writes and TxPerSec count
// cycles, its latency is a whole cycle's.
type LeasePath struct {
	Path
	// ProposalsPerCycle is etcd's committed Raft proposals over the
	// run's cycles, warmup and failures included; -1 when not read (a
	// TLS etcd). Whatever else wrote to etcd meanwhile counts too.
	ProposalsPerCycle float64 `json:"etcd_proposals_per_cycle"`
	// EtcdCPUPerCycle is the CPU of the etcd member whose metrics are
	// read, over the run's cycles; 0 when not read (a TLS etcd, or one in
	// this process). Like the proposals, whatever else asked etcd for work
	// meanwhile counts too.
	EtcdCPUPerCycle time.Duration `json:"etcd_cpu_per_cycle_ns,omitempty"`
	// CPUPerCycle is the CPU of CPUOf over the run's cycles; 0 when not
	// measured (the yardstick, a running gateway without --gateway-pid).
	CPUPerCycle time.Duration `json:"cpu_per_cycle_ns,omitempty"`
	CPUOf       string        `json:"cpu_of,omitempty"`
}

// Err is non-nil, wrapping ErrInvalid, when a cell had failed cycles or
// none on a path.
func (r *LeaseReport) Err() error {
	var bad []string
	for _, c := range r.Cells {
		if c.Gateway.Writes == 0 || c.Mutex.Writes == 0 || c.Gateway.ErrorCount() > 0 || c.Mutex.ErrorCount() > 0 {
			bad = append(bad, fmt.Sprintf("%d clients %s write=%v (gateway: %s; mutex: %s)", c.Clients, c.Dist, c.Write, errorsOf(c.Gateway.Path), errorsOf(c.Mutex.Path)))
		}
	}
	if bad != nil {
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(bad, "; "))
	}
	return nil
}

func errorsOf(p Path) string {
	if p.ErrorCount() == 0 {
		return fmt.Sprintf("%d cycles", p.Writes)
	}
	return fmt.Sprintf("%d failed (%s), first: %s", p.ErrorCount(), kinds(p.Errors), p.FirstError)
}

// WriteJSON writes the report as one JSON document.
func (r *LeaseReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report as a table.
func (r *LeaseReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "lock cycles: gateway %s against etcd's Session+Mutex on the same etcd (in process: %v); GOMAXPROCS %d; %.1fs measured after %.1fs warmup per path and cell\n\n",
		r.Gateway, r.EtcdInProcess, r.GOMAXPROCS, r.DurationSeconds, r.WarmupSeconds)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "clients\tdist\twrite\tpath\tcycles/s\tp50\tp99\tproposals/cycle\tetcd cpu/cycle\tcpu/cycle\tratio\terrors")
	for _, c := range r.Cells {
		for i, p := range []struct {
			name string
			path LeasePath
		}{{"gateway", c.Gateway}, {"mutex", c.Mutex}} {
			ratio := ""
			if i == 0 {
				ratio = fmt.Sprintf("%.2f", c.Ratio)
			}
			fmt.Fprintf(tw, "%d\t%s\t%v\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", c.Clients, c.Dist, c.Write, p.name,
				p.path.TxPerSec, ms(p.path.Latency.P50), ms(p.path.Latency.P99), proposals(p.path.ProposalsPerCycle), cpuCell(p.path.EtcdCPUPerCycle), cpuCell(p.path.CPUPerCycle), ratio, p.path.ErrorCount())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Cells {
		if c.Gateway.CPUOf != "" {
			fmt.Fprintf(&b, "\ncpu/cycle is the CPU of %s.\n", c.Gateway.CPUOf)
			break
		}
	}
	for _, c := range r.Cells {
		if c.Gateway.EtcdCPUPerCycle > 0 {
			fmt.Fprintf(&b, "etcd cpu/cycle is the CPU of the etcd member whose metrics were read, on either path.\n")
			break
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func proposals(p float64) string {
	if p < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", p)
}

func cpuCell(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
}
