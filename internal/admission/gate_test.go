package admission

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

var errRefused = errors.New("refused")

// waiters counts the waiters and says when one begins to wait.
type waiters struct {
	n     atomic.Int64
	began chan struct{}
}

func (w *waiters) Inc() { w.n.Add(1); w.began <- struct{}{} }
func (w *waiters) Dec() { w.n.Add(-1) }

type waits struct{ n atomic.Int64 }

func (w *waits) Observe(float64) { w.n.Add(1) }

// fill takes n turns for client.
func fill(t *testing.T, g *Gate, client string, n int) {
	t.Helper()
	for range n {
		if err := g.Enter(context.Background(), client); err != nil {
			t.Fatal(err)
		}
	}
}

func noneWaiting(t *testing.T, waiting *waiters) {
	t.Helper()
	if w := waiting.n.Load(); w != 0 {
		t.Fatalf("%d still counted as waiting", w)
	}
}

func newGate(limit int, wait time.Duration) (*Gate, *waiters, *waits) {
	waiting, waited := &waiters{began: make(chan struct{}, 16)}, &waits{}
	return New(Config{Limit: limit, Wait: wait, Refused: errRefused, What: "writes", Waiting: waiting, Waited: waited}), waiting, waited
}

// TestTurns: turns are handed out up to the limit, a waiter gets the
// next one given back, and a waiter whose request ends or whose wait
// runs out is refused without taking a turn.
func TestTurns(t *testing.T) {
	g, waiting, waited := newGate(2, 50*time.Millisecond)
	ctx := context.Background()
	fill(t, g, "c", 2)
	if err := g.Enter(ctx, "c"); !errors.Is(err, errRefused) {
		t.Fatalf("a third at a limit of two: %v, want the refusal", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := g.Enter(cancelled, "c"); !errors.Is(err, errRefused) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose request ended: %v", err)
	}
	if n := g.InFlight(); n != 2 {
		t.Fatalf("%d turns taken after two refusals, want 2", n)
	}
	<-waiting.began
	<-waiting.began

	g.cfg.Wait = time.Minute
	got := make(chan error)
	go func() { got <- g.Enter(ctx, "c") }()
	<-waiting.began
	g.Leave("c")
	if err := <-got; err != nil {
		t.Fatalf("a waiter when a turn is given back: %v", err)
	}
	if n := g.InFlight(); n != 2 {
		t.Fatalf("%d turns taken, want 2", n)
	}
	noneWaiting(t, waiting)
	if n := waited.n.Load(); n != 3 {
		t.Fatalf("%d waits observed, want 3 (two refused, one admitted)", n)
	}
}

// TestAdmissionIsFairBetweenClients: a client alone may take every turn; once
// another client waits, each turn given back goes to the client that
// holds the fewest, however many the first has waiting, and in arrival
// order within a client.
func TestAdmissionIsFairBetweenClients(t *testing.T) {
	g, waiting, _ := newGate(3, time.Minute)
	ctx := context.Background()
	fill(t, g, "flood", 3)
	admitted := make(chan string, 8)
	queue := func(client string) {
		go func() {
			if err := g.Enter(ctx, client); err != nil {
				t.Error(err)
			}
			admitted <- client
		}()
		<-waiting.began
	}
	for range 4 { // the flood's own, queued first
		queue("flood")
	}
	queue("honest")
	if _, w := g.Counts(); w["flood"] != 4 || w["honest"] != 1 {
		t.Fatalf("waiting %v, want flood 4 and honest 1", w)
	}
	g.Leave("flood")
	if got := <-admitted; got != "honest" {
		t.Fatalf("the turn given back went to %s, want honest: it holds none, the flood three", got)
	}
	g.Leave("flood")
	if got := <-admitted; got != "flood" {
		t.Fatalf("the next turn went to %s, want flood's first waiter: nobody else waits", got)
	}
	if h, _ := g.Counts(); h["flood"] != 2 || h["honest"] != 1 {
		t.Fatalf("held %v, want flood 2 and honest 1", h)
	}
	// Give every turn back: the flood's three waiters get them.
	for range 3 {
		g.Leave("flood")
	}
	for range 3 {
		if got := <-admitted; got != "flood" {
			t.Fatalf("admitted %s, want flood", got)
		}
	}
	noneWaiting(t, waiting)
}

// TestTurnGivenBackAndTakenAgain: a Turn is taken once however often it
// is taken, given back once however often it is released.
func TestTurnGivenBackAndTakenAgain(t *testing.T) {
	g, _, _ := newGate(1, time.Minute)
	ctx := context.Background()
	tn := g.Turn("c")
	for range 2 {
		if err := tn.Take(ctx); err != nil || !tn.Held() {
			t.Fatalf("Take: %v, held %v", err, tn.Held())
		}
	}
	if n := g.InFlight(); n != 1 {
		t.Fatalf("%d turns taken, want 1", n)
	}
	tn.Release()
	tn.Release()
	if n := g.InFlight(); n != 0 || tn.Held() {
		t.Fatalf("%d turns taken after Release, held %v", n, tn.Held())
	}
}
