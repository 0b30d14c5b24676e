package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
)

// Memory is the gateway's resident memory in one cell, around its idle
// connections: what each connection costs. With the gateway in this
// process, the figures are this whole process's (the load generator,
// the client side of the idle connections, an embedded etcd); with
// replicas, their processes' together.
type Memory struct {
	IdleConnections int `json:"idle_connections"`
	// RSSBefore is VmRSS before the idle connections opened, RSSIdle
	// with them open, RSSEnd at the cell's end, its load measured.
	RSSBefore int64 `json:"rss_before_bytes"`
	RSSIdle   int64 `json:"rss_idle_bytes"`
	RSSEnd    int64 `json:"rss_end_bytes"`
	// PerConnection is (RSSIdle − RSSBefore) / IdleConnections.
	PerConnection float64 `json:"rss_per_idle_connection_bytes,omitempty"`
	// Note says why there are no figures, when there are none.
	Note string `json:"note,omitempty"`
}

// openIdleMeasured opens the run's idle connections to t, reading t's
// RSS before and after, and returns them with what it measured; nil
// Memory when the run asked neither idle connections nor could read
// t's memory outside this process.
func (e *env) openIdleMeasured(ctx context.Context, t *target) (*idleConns, *Memory, error) {
	n := e.cfg.IdleConnections
	if n == 0 && (len(t.pids) == 0 || t.inProcess) {
		return &idleConns{}, nil, nil // this process's RSS is in Report.Process
	}
	m := &Memory{IdleConnections: n}
	before, err := t.rss()
	if err != nil {
		m.Note = fmt.Sprintf("no RSS: %v", err)
	}
	addrs, aerr := t.addrs()
	if aerr != nil {
		return nil, nil, aerr
	}
	ic := &idleConns{}
	if n > 0 {
		if ic, err = openIdle(ctx, addrs, n); err != nil {
			return nil, nil, err
		}
	}
	if m.Note != "" {
		return ic, m, nil
	}
	m.RSSBefore = before
	if m.RSSIdle, err = t.rss(); err != nil {
		m.Note = fmt.Sprintf("no RSS: %v", err)
	}
	if n > 0 {
		m.PerConnection = float64(m.RSSIdle-m.RSSBefore) / float64(n)
	}
	return ic, m, nil
}

// finish reads t's RSS at the cell's end.
func (m *Memory) finish(t *target) {
	if m == nil || m.Note != "" {
		return
	}
	rss, err := t.rss()
	if err != nil {
		m.Note = fmt.Sprintf("no RSS at the end: %v", err)
		return
	}
	m.RSSEnd = rss
}

// processRSS returns VmRSS and VmHWM of process pid in bytes, from
// /proc/PID/status.
func processRSS(pid int) (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("bench: the gateway's memory: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) != 3 || string(fields[2]) != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(string(fields[1]), 10, 64)
		if err != nil {
			continue
		}
		switch string(fields[0]) {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	if rss == 0 {
		return 0, 0, fmt.Errorf("bench: no VmRSS in /proc/%d/status", pid)
	}
	return rss, peak, nil
}
