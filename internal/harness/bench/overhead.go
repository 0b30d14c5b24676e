package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Overhead is what the gateway adds to one client's write. The paths take
// turns in short runs of overheadRun writes each (direct, HTTP floor,
// gateway, again and again) instead of in windows of their own: on a disk
// whose flush time drifts from one second to the next, two windows differ
// by more than the overhead itself, while runs tens of milliseconds apart
// see the same disk. Runs, not single writes, so that each path runs with
// its code and data in the CPU's caches, as it would serving alone.
type Overhead struct {
	// PerPath is how many writes of each path were measured (the
	// fewest of the three, if some failed).
	PerPath int64 `json:"writes_per_path"`
	// Acknowledged counts every write acknowledged on any path, warmup
	// included.
	Acknowledged int64       `json:"acknowledged"`
	Direct       Percentiles `json:"direct"`
	Floor        Percentiles `json:"http_floor"`
	Gateway      Percentiles `json:"gateway"`
	// GatewayP50 is the gateway's p50 less the direct path's: the
	// overhead a client sees. FloorP50 is the HTTP floor's less the
	// direct path's: what the thinnest net/http handler around the same
	// write (JSON body decoded, JSON answer) costs on this machine, part
	// of GatewayP50. OwnP50 is the gateway's less the floor's: routing,
	// authentication, the admission gate, argument validation, token
	// validation, the hand-off to the committer, metrics.
	GatewayP50 time.Duration `json:"gateway_p50_overhead_ns"`
	FloorP50   time.Duration `json:"http_floor_p50_overhead_ns"`
	OwnP50     time.Duration `json:"gateway_own_p50_ns"`
	// Errors counts failed writes by path and kind; FirstError is one.
	Errors     map[string]int64 `json:"errors,omitempty"`
	FirstError string           `json:"first_error,omitempty"`
}

// ErrorCount is the number of failed writes; 0 for no measurement.
func (o *Overhead) ErrorCount() int64 {
	if o == nil {
		return 0
	}
	var n int64
	for _, c := range o.Errors {
		n += c
	}
	return n
}

// overheadRun is how many writes a path makes in a row before the next
// path's turn: enough for its caches to be warm after the first few, few
// enough (tens of milliseconds) that the disk has not moved meanwhile.
const overheadRun = 32

// overheadPath is one path of the overhead measurement.
type overheadPath struct {
	name  string
	write writeFunc
	next  func() int64 // seeded alike on every path: the same accounts in the same order
	lat   []time.Duration
}

// measureOverhead runs direct, the HTTP floor and the gateway (through
// viaGateway) in turns, one client, for w: warmup turns, then measured
// ones until w's duration has passed and every path had at least
// w.minWrites writes measured, or ctx ends. Every path writes the
// accounts dist picks, in the same order. The client is closed-loop
// whatever w's rate: an overhead is one write's. With an external
// gateway, the floor still runs in this process.
func measureOverhead(ctx context.Context, dist Dist, w window, direct, viaGateway writeFunc, signed []string, op string) (Overhead, error) {
	floor, err := startStub(direct)
	if err != nil {
		return Overhead{}, fmt.Errorf("bench: http floor: %w", err)
	}
	defer floor.close(ctx)
	fc := newLeanClient(floor.addr, op, signed, 1)
	defer fc.close()
	paths := []*overheadPath{
		{name: "direct", write: direct, next: overheadPicker(dist)},
		{name: "http floor", write: fc.write, next: overheadPicker(dist)},
		{name: "gateway", write: viaGateway, next: overheadPicker(dist)},
	}

	var o Overhead
	var turns int64 // measured writes asked of each path
	start := time.Now()
	measureFrom, end := start.Add(w.warmup), start.Add(w.warmup+w.duration)
	for round := 0; ctx.Err() == nil; round++ {
		now := time.Now()
		if !now.Before(end) && turns >= w.minWrites {
			break
		}
		measured := !now.Before(measureFrom)
		// Each path goes first in a third of the rounds: the first to
		// write an account finds it as the last round left it, the others
		// find it just updated, on a warm backend.
		for i := range paths {
			p := paths[(round+i)%len(paths)]
			for range overheadRun {
				if ctx.Err() != nil {
					break
				}
				o.turn(ctx, p, measured)
			}
		}
		if measured {
			turns += overheadRun
		}
	}
	if err := ctx.Err(); err != nil {
		return o, fmt.Errorf("bench: overhead: interrupted: %w", err)
	}
	o.PerPath = int64(min(len(paths[0].lat), len(paths[1].lat), len(paths[2].lat)))
	o.Direct, o.Floor, o.Gateway = summarize(paths[0].lat), summarize(paths[1].lat), summarize(paths[2].lat)
	o.GatewayP50 = o.Gateway.P50 - o.Direct.P50
	o.FloorP50 = o.Floor.P50 - o.Direct.P50
	o.OwnP50 = o.Gateway.P50 - o.Floor.P50
	return o, nil
}

// overheadPicker picks accounts as dist does, from the same seed for
// every path.
func overheadPicker(dist Dist) func() int64 {
	return dist.picker(rand.New(rand.NewPCG(1, 0x6f76657268656164)))
}

// turn makes one write on p and records it.
func (o *Overhead) turn(ctx context.Context, p *overheadPath, measured bool) {
	t0 := time.Now()
	kind, detail := p.write(ctx, p.next())
	d := time.Since(t0)
	switch {
	case kind != "":
		if o.Errors == nil {
			o.Errors, o.FirstError = map[string]int64{}, p.name+": "+detail
		}
		o.Errors[p.name+" "+kind]++
		return
	case measured:
		p.lat = append(p.lat, d)
	}
	o.Acknowledged++
}
