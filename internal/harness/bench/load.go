package bench

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// writeFunc sends one write to account id and waits for its outcome: ""
// when it was acknowledged, otherwise a short kind for the report ("409
// stale-token", "unavailable") and the error's text. ctx is not the
// cell's deadline: a write is never abandoned halfway, because an aborted
// write may still commit and would then go uncounted.
type writeFunc func(ctx context.Context, id int64) (kind, detail string)

// Path is one path's measurement in one cell.
type Path struct {
	// Writes were acknowledged in the measured window; WarmupWrites
	// before it. Both committed.
	Writes       int64       `json:"writes"`
	WarmupWrites int64       `json:"warmup_writes"`
	TxPerSec     float64     `json:"tx_per_sec"`
	Latency      Percentiles `json:"latency"`
	// Errors counts failed writes by kind, warmup included; FirstError is
	// the text of one of them.
	Errors     map[string]int64 `json:"errors,omitempty"`
	FirstError string           `json:"first_error,omitempty"`
	// AllocsPerWrite and BytesPerWrite are the whole process's heap
	// allocations in the measured window divided by its writes.
	AllocsPerWrite float64 `json:"allocs_per_write"`
	BytesPerWrite  float64 `json:"bytes_per_write"`
}

// ErrorCount is the number of failed writes.
func (p *Path) ErrorCount() int64 {
	var n int64
	for _, c := range p.Errors {
		n += c
	}
	return n
}

// loopClient is one client's own record: no locks on the hot path.
type loopClient struct {
	lat          []time.Duration
	warmupWrites int64
	errors       map[string]int64
	firstError   string
}

// window is what one path of one cell runs for.
type window struct {
	warmup, duration time.Duration
	// rate: open loop, writes per second for all clients together; 0:
	// closed loop.
	rate float64
	// minWrites: the measurement goes on past duration until this many
	// writes were measured (or ctx ends), so that a path that had a slow
	// moment on a busy machine is still measured, not reported empty.
	minWrites int64
}

// drive runs clients clients against write for w. Closed-loop clients
// each send a write, wait for its answer, and send the next; open-loop
// ones keep a fixed schedule (see pacer). Writes started during warmup are
// not measured. Every client uses its own generator seeded by its index,
// so both paths of a cell write the same accounts in the same order.
func drive(ctx context.Context, clients int, dist Dist, w window, write writeFunc) Path {
	start := time.Now()
	measureFrom, end := start.Add(w.warmup), start.Add(w.warmup+w.duration)
	var every time.Duration // per client; 0: closed loop
	if w.rate > 0 {
		every = time.Duration(float64(clients) / w.rate * float64(time.Second))
	}
	duration := w.duration
	var measured atomic.Int64 // writes measured so far, all clients
	enough := func() bool { return measured.Load() >= w.minWrites }
	// Room for 50,000 writes per second shared by all clients; append
	// grows past it if the machine is faster.
	capacity := min(int(duration.Seconds()*50_000)/clients+1024, 1<<20)

	recs := make([]loopClient, clients)
	var wg sync.WaitGroup
	for i := range recs {
		rec := &recs[i]
		rec.lat = make([]time.Duration, 0, capacity)
		wg.Go(func() {
			next := dist.picker(rand.New(rand.NewPCG(uint64(i), 0x62656e6368)))
			pace := pacer{every: every, due: start.Add(every * time.Duration(i) / time.Duration(clients)), end: end, enough: enough} // staggered
			for {
				t0, ok := pace.next(ctx)
				if !ok {
					return
				}
				kind, detail := write(ctx, next())
				switch {
				case kind != "":
					rec.fail(kind, detail)
				case t0.Before(measureFrom):
					rec.warmupWrites++
				default:
					rec.lat = append(rec.lat, time.Since(t0))
					measured.Add(1)
				}
			}
		})
	}

	// Allocations are read around the measured window; the few writes
	// straddling its edges are noise next to thousands inside it.
	_ = sleepUntil(ctx, measureFrom)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	wg.Wait()
	elapsed := time.Since(t0)
	runtime.ReadMemStats(&m1)

	var p Path
	parts := make([][]time.Duration, clients)
	for i, rec := range recs {
		parts[i] = rec.lat
		p.WarmupWrites += rec.warmupWrites
		for k, n := range rec.errors {
			if p.Errors == nil {
				p.Errors = map[string]int64{}
			}
			p.Errors[k] += n
			if p.FirstError == "" {
				p.FirstError = rec.firstError
			}
		}
	}
	lat := merge(parts)
	p.Writes = int64(len(lat))
	p.Latency = summarize(lat)
	if elapsed > 0 {
		p.TxPerSec = float64(p.Writes) / elapsed.Seconds()
	}
	if p.Writes > 0 {
		p.AllocsPerWrite = float64(m1.Mallocs-m0.Mallocs) / float64(p.Writes)
		p.BytesPerWrite = float64(m1.TotalAlloc-m0.TotalAlloc) / float64(p.Writes)
	}
	return p
}

func (c *loopClient) fail(kind, detail string) {
	if c.errors == nil {
		c.errors = map[string]int64{}
		c.firstError = detail
	}
	c.errors[kind]++
}

// sleepUntil returns at t, or false as soon as ctx is done.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// pacer says when one client sends its next write and from when that
// write is timed.
type pacer struct {
	every  time.Duration // between one client's writes; 0: closed loop
	due    time.Time     // open loop: the next write's slot
	end    time.Time
	enough func() bool // whether the run has measured enough to end at end
}

// over reports whether the run is over at t.
func (p *pacer) over(t time.Time) bool { return !t.Before(p.end) && (p.enough == nil || p.enough()) }

// next waits for the next write's turn and returns the time to measure it
// from, or false once the run is over: at end, however far behind the
// schedule is, or as soon as ctx is done. A write sent on time is timed
// from when it went out, so a timer that wakes late is not charged to the
// path; a write held up because the one before it outlasted its slot is
// timed from when it was due, so a stalled path is charged for the writes
// it held up (coordinated omission, as wrk2 corrects it).
func (p *pacer) next(ctx context.Context) (time.Time, bool) {
	now := time.Now()
	if ctx.Err() != nil || p.over(now) {
		return time.Time{}, false
	}
	if p.every == 0 {
		return now, true
	}
	due := p.due
	p.due = due.Add(p.every)
	switch {
	case p.over(due):
		return time.Time{}, false
	case now.Before(due):
		if !sleepUntil(ctx, due) {
			return time.Time{}, false
		}
		return time.Now(), true
	}
	return due, true
}
