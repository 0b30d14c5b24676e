package bench

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// TestOpenLoopFollowsItsSchedule: open-loop clients send no more writes
// than their schedule allows, and a stall is charged to the writes that
// fell due during it, not just to the one that stalled.
func TestOpenLoopFollowsItsSchedule(t *testing.T) {
	const (
		clients  = 2
		rate     = 200 // writes/s together: one every 10 ms per client
		duration = 600 * time.Millisecond
		stall    = 200 * time.Millisecond
	)
	var calls atomic.Int64
	write := func(context.Context, int64) (string, string) {
		if calls.Add(1) == 10 {
			time.Sleep(stall)
		}
		return "", ""
	}
	p := drive(context.Background(), clients, Uniform, 0, duration, rate, write)

	// Each client's schedule has duration/every = 60 slots.
	if most := int64(clients * (duration / (clients * time.Second / rate))); p.Writes > most {
		t.Errorf("%d writes, but the schedule has room for %d", p.Writes, most)
	}
	if p.Writes < 10 {
		t.Fatalf("%d writes: the schedule was not followed", p.Writes)
	}
	if p.Latency.Max < stall {
		t.Errorf("max latency %v, want at least the %v stall", p.Latency.Max, stall)
	}
	// The stalled client's writes due in the next 200 ms went out late:
	// about 20 of ~120 writes, far more than the 1 % above p99.
	if p.Latency.P99 < stall/2 {
		t.Errorf("p99 %v: the writes held up by the stall were not charged for it", p.Latency.P99)
	}
}

// TestCheckLoad: loads that cannot run, or could hurt, are refused before
// anything starts.
func TestCheckLoad(t *testing.T) {
	good := func() Config {
		return Config{Dir: "d", Clients: []int{1, 16}, Dists: []Dist{Uniform}, Duration: time.Second}
	}
	for _, tc := range []struct {
		name   string
		change func(*Config)
		ok     bool
	}{
		{"closed loop", func(*Config) {}, true},
		{"open loop", func(c *Config) { c.Rate = 4000 }, true},
		{"negative rate", func(c *Config) { c.Rate = -1 }, false},
		{"NaN rate", func(c *Config) { c.Rate = math.NaN() }, false},
		{"infinite rate", func(c *Config) { c.Rate = math.Inf(1) }, false},
		{"too many clients", func(c *Config) { c.Clients = []int{maxClients + 1} }, false},
		{"no duration", func(c *Config) { c.Duration = 0 }, false},
		{"a gateway elsewhere", func(c *Config) { c.GatewayURL = "http://10.0.0.1:8080" }, false},
		{"--no-coalesce on a running gateway", func(c *Config) { c.GatewayURL, c.NoCoalesce = "http://127.0.0.1:8080", true }, false},
	} {
		c := good()
		tc.change(&c)
		err := c.CheckLoad()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrConfig)) {
			t.Errorf("%s: CheckLoad() = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
