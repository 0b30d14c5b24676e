package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Limits of the load's shape.
const (
	// maxReplicas bounds the gateway processes one machine is asked to run.
	maxReplicas = 16
	// maxIdleConnections bounds the idle connections a run opens: past
	// the 10,000 the benchmark asks for, with room to look further.
	maxIdleConnections = 200_000
)

// checkTarget reports the first problem with the gateway under test:
// replicas, a running gateway's process, idle connections, wrk.
func (c *Config) checkTarget() error {
	switch {
	case c.Replicas < 0 || c.Replicas > maxReplicas:
		return fmt.Errorf("%w: %d replicas: want 0 (the gateway in this process) to %d", ErrConfig, c.Replicas, maxReplicas)
	case c.Replicas > 0 && c.GatewayURL != "":
		return fmt.Errorf("%w: --replicas starts gateways of its own; --gateway drives a running one: choose one", ErrConfig)
	case c.Replicas > 0 && c.NoCoalesce:
		return fmt.Errorf("%w: --no-coalesce is for the in-process gateway; replicas serve the bench policy as it is", ErrConfig)
	case c.GatewayPID < 0 || (c.GatewayPID > 0 && c.GatewayURL == ""):
		return fmt.Errorf("%w: --gateway-pid names the process of --gateway", ErrConfig)
	case c.IdleConnections < 0 || c.IdleConnections > maxIdleConnections:
		return fmt.Errorf("%w: %d idle connections: want 0 to %d", ErrConfig, c.IdleConnections, maxIdleConnections)
	case c.Wrk && c.Replicas > 1:
		return fmt.Errorf("%w: wrk loads one URL: --wrk wants one gateway (--replicas 0 or 1)", ErrConfig)
	case c.Wrk && c.Rate > 0:
		return fmt.Errorf("%w: wrk's clients are closed-loop: --wrk does not go with --rate", ErrConfig)
	}
	return nil
}

// target is the gateway one cell measures: in this process, replicas
// started for the cell, or a running one.
type target struct {
	urls []string // one per gateway process
	// pids are the processes whose RSS is the gateway's memory; none
	// when unknown.
	pids []int
	// inProcess: the gateway's allocations are this process's.
	inProcess bool
	replicas  []*replica
	close     func() error
}

// startTarget starts the cell's gateway, if the run starts one, with
// pgx pools of size connections.
func (e *env) startTarget(ctx context.Context, size int) (*target, error) {
	switch {
	case e.cfg.GatewayURL != "":
		t := &target{urls: []string{e.cfg.GatewayURL}, close: func() error { return nil }}
		if e.cfg.GatewayPID > 0 {
			t.pids = []int{e.cfg.GatewayPID}
		}
		return t, nil
	case e.cfg.Replicas > 0:
		rs, err := e.startReplicas(ctx, size)
		if err != nil {
			return nil, err
		}
		t := &target{replicas: rs, close: func() error { return stopReplicas(rs) }}
		for _, r := range rs {
			t.urls, t.pids = append(t.urls, "http://"+r.addr), append(t.pids, r.pid())
		}
		return t, nil
	}
	gw, err := startGateway(ctx, e, size)
	if err != nil {
		return nil, err
	}
	return &target{urls: []string{gw.url}, pids: []int{os.Getpid()}, inProcess: true, close: gw.close}, nil
}

// addrs are the gateways' host:port.
func (t *target) addrs() ([]string, error) {
	out := make([]string, len(t.urls))
	for i, u := range t.urls {
		a, err := gatewayAddr(u)
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

// rss is the gateway processes' VmRSS together, in bytes.
func (t *target) rss() (int64, error) {
	if len(t.pids) == 0 {
		return 0, errors.New("bench: the gateway's process is unknown (--gateway-pid)")
	}
	var sum int64
	for _, pid := range t.pids {
		rss, _, err := processRSS(pid)
		if err != nil {
			return 0, err
		}
		sum += rss
	}
	return sum, nil
}
