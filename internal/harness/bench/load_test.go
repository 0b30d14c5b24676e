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
	p := drive(context.Background(), clients, Uniform, window{duration: duration, rate: rate}, write)

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

// TestOpenLoopEndsOnTime: a run ends at its deadline however far behind
// its schedule the path is, and at once when its context ends, even while
// its clients wait for their next slot.
func TestOpenLoopEndsOnTime(t *testing.T) {
	slow := func(context.Context, int64) (string, string) {
		time.Sleep(50 * time.Millisecond) // 20 writes/s per client, against 500 scheduled
		return "", ""
	}
	start := time.Now()
	p := drive(context.Background(), 2, Uniform, window{duration: 200 * time.Millisecond, rate: 1000}, slow)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a 200 ms run behind its schedule took %v: it kept sending its backlog", took)
	}
	if p.Writes == 0 || p.Writes > 12 {
		t.Errorf("%d writes from 2 clients at 20 writes/s for 200 ms", p.Writes)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	quick := func(context.Context, int64) (string, string) { return "", "" }
	start = time.Now()
	drive(ctx, 4, Uniform, window{duration: time.Minute, rate: 4}, quick) // one write every 4 s per client
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a run whose context ended after 100 ms took %v: its clients slept through it", took)
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
		{"under one write per second per client", func(c *Config) { c.Rate = 10 }, false},
		{"NaN rate", func(c *Config) { c.Rate = math.NaN() }, false},
		{"infinite rate", func(c *Config) { c.Rate = math.Inf(1) }, false},
		{"too many clients", func(c *Config) { c.Clients = []int{maxClients + 1} }, false},
		{"no duration", func(c *Config) { c.Duration = 0 }, false},
		{"a gateway elsewhere", func(c *Config) { c.GatewayURL = "http://10.0.0.1:8080" }, false},
		{"a gateway over TLS", func(c *Config) { c.GatewayURL = "https://127.0.0.1:8443" }, false},
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

// TestAWindowTooShortStillMeasures: writes slower than the whole window
// (a busy machine) still give the cell its minimum of measured writes,
// closed loop and open loop.
func TestAWindowTooShortStillMeasures(t *testing.T) {
	slow := func(context.Context, int64) (string, string) {
		time.Sleep(20 * time.Millisecond)
		return "", ""
	}
	for _, rate := range []float64{0, 1000} {
		p := drive(context.Background(), 2, Uniform, window{duration: time.Millisecond, rate: rate, minWrites: 7}, slow)
		if p.Writes < 7 || p.TxPerSec <= 0 {
			t.Errorf("rate %v: %d writes measured, %.0f tx/s; want at least 7", rate, p.Writes, p.TxPerSec)
		}
	}
}
