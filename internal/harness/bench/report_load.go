package bench

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// writeLoad prints what the load's options added to the cells: the
// replicas' shares, wrk's figures beside the bench client's, and the
// gateway's memory around idle connections.
func (r *Report) writeLoad(b *strings.Builder) {
	r.writeReplicas(b)
	r.writeWrk(b)
	r.writeMemory(b)
}

func (r *Report) writeReplicas(b *strings.Builder) {
	if r.Replicas == 0 {
		return
	}
	fmt.Fprintf(b, "\nreplicas: the gateway path's writes each acknowledged (its own fencegw_writes_total, warmup included); gateway tx/s above is their total:\n")
	for _, c := range r.Cells {
		var parts []string
		var total int64
		for _, s := range c.Replicas {
			parts = append(parts, fmt.Sprintf("%s %d", s.Addr, s.Writes))
			total += s.Writes
		}
		fmt.Fprintf(b, "  %d×%-7s  %s  (total %d)\n", c.Clients, c.Dist, strings.Join(parts, ", "), total)
	}
}

func (r *Report) writeWrk(b *strings.Builder) {
	var cells []Cell
	for _, c := range r.Cells {
		if c.Wrk != nil {
			cells = append(cells, c)
		}
	}
	if len(cells) == 0 {
		return
	}
	fmt.Fprintf(b, "\nwrk, an outside load generator, on the same gateway after the bench's client: as many connections as clients, the same accounts, tokens and bodies, whole seconds:\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tdist   \tthreads\tbench w/s\twrk w/s\twrk/bench\tbench p50/p99/p999 ms\twrk p50/p99/p999 ms\twrk answers ≥400\tsocket errors\t")
	for _, c := range cells {
		w := c.Wrk
		fmt.Fprintf(tw, "%d\t%-7s\t%d\t%.0f\t%.0f\t%.2f\t%s\t%s\t%d\t%d\t\n", c.Clients, c.Dist, w.Threads,
			c.Gateway.TxPerSec, w.WritesPerSec, c.WrkRatio, percentiles(c.Gateway.Latency), percentiles(w.Latency), w.StatusErrors, w.SocketErrors)
	}
	_ = tw.Flush()
	for _, c := range cells {
		if !c.Wrk.valid() {
			fmt.Fprintf(b, "  %d×%s: wrk's run had refusals or socket errors: it measured something other than writes\n", c.Clients, c.Dist)
		}
	}
}

func (r *Report) writeMemory(b *strings.Builder) {
	var cells []Cell
	for _, c := range r.Cells {
		if c.Memory != nil {
			cells = append(cells, c)
		}
	}
	if len(cells) == 0 {
		return
	}
	whose := "the gateway processes' together"
	if r.Gateway == "in-process" {
		whose = "this whole process's: gateway, load generator, the client ends of the idle connections"
		if r.EtcdInProcess {
			whose += ", embedded etcd"
		}
	}
	fmt.Fprintf(b, "\ngateway RSS (%s), before the idle connections, with them, at the cell's end:\n", whose)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tdist   \tidle conns\tbefore\tidle\tper idle conn\tend\t")
	for _, c := range cells {
		m := c.Memory
		if m.Note != "" {
			fmt.Fprintf(tw, "%d\t%-7s\t%d\t%s\t\t\t\t\n", c.Clients, c.Dist, m.IdleConnections, m.Note)
			continue
		}
		per := "-"
		if m.IdleConnections > 0 {
			per = fmt.Sprintf("%.1f KiB", m.PerConnection/1024)
		}
		fmt.Fprintf(tw, "%d\t%-7s\t%d\t%s\t%s\t%s\t%s\t\n", c.Clients, c.Dist, m.IdleConnections, mib(m.RSSBefore), mib(m.RSSIdle), per, mib(m.RSSEnd))
	}
	_ = tw.Flush()
}
