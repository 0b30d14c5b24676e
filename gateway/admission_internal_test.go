package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestAdmissionTurns: turns are handed out up to the limit, a waiter gets
// the next one given back, and a waiter whose request ends or whose wait
// runs out is refused as overloaded without taking a turn.
func TestAdmissionTurns(t *testing.T) {
	waiting := prometheus.NewGauge(prometheus.GaugeOpts{Name: "w"})
	waited := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h"})
	a := newAdmission(2, 50*time.Millisecond, waiting, waited)
	ctx := context.Background()
	for range 2 {
		if err := a.enter(ctx, "c"); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.enter(ctx, "c"); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("a third write at a limit of two: %v, want ErrOverloaded", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := a.enter(cancelled, "c"); !errors.Is(err, ErrOverloaded) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose request ended: %v", err)
	}
	if n := a.inFlight(); n != 2 {
		t.Fatalf("%d turns taken after two refusals, want 2", n)
	}

	a.wait = time.Minute
	got := make(chan error)
	go func() { got <- a.enter(ctx, "c") }()
	if !testenv.WaitFor(10*time.Second, func() bool { return metricValue(t, waiting) == 1 }) {
		t.Fatal("the third write never waited")
	}
	a.leave("c")
	if err := <-got; err != nil {
		t.Fatalf("a waiter when a turn is given back: %v", err)
	}
	if n := a.inFlight(); n != 2 {
		t.Fatalf("%d turns taken, want 2", n)
	}
	if w := metricValue(t, waiting); w != 0 {
		t.Fatalf("%v writes still counted as waiting", w)
	}
	if n := metricCount(t, waited); n != 3 {
		t.Fatalf("%d waits observed, want 3 (two refused, one admitted)", n)
	}
}

// TestAdmissionIsFairBetweenClients: a client alone may take every turn;
// once another client waits, each turn given back goes to the client that
// holds the fewest, however many writes the first has waiting, and in
// arrival order within a client.
func TestAdmissionIsFairBetweenClients(t *testing.T) {
	waiting := prometheus.NewGauge(prometheus.GaugeOpts{Name: "w"})
	waited := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h"})
	a := newAdmission(3, time.Minute, waiting, waited)
	ctx := context.Background()
	for range 3 {
		if err := a.enter(ctx, "flood"); err != nil {
			t.Fatal(err)
		}
	}
	admitted := make(chan string, 8)
	queue := func(client string, n float64) {
		go func() {
			if err := a.enter(ctx, client); err != nil {
				t.Error(err)
			}
			admitted <- client
		}()
		if !testenv.WaitFor(10*time.Second, func() bool { return metricValue(t, waiting) == n }) {
			t.Fatalf("%s never waited", client)
		}
	}
	for i := range 4 { // the flood's own, queued first
		queue("flood", float64(i+1))
	}
	queue("honest", 5)
	a.leave("flood")
	if got := <-admitted; got != "honest" {
		t.Fatalf("the turn given back went to %s, want honest: it holds none, the flood three", got)
	}
	a.leave("flood")
	if got := <-admitted; got != "flood" {
		t.Fatalf("the next turn went to %s, want flood's first waiter: nobody else waits", got)
	}
	if n := a.inFlight(); n != 3 {
		t.Fatalf("%d turns taken, want 3", n)
	}
	// Give every turn back: the flood's three waiting writes get them.
	for range 3 {
		a.leave("flood")
	}
	for range 3 {
		if got := <-admitted; got != "flood" {
			t.Fatalf("admitted %s, want flood", got)
		}
	}
	if w := metricValue(t, waiting); w != 0 {
		t.Fatalf("%v writes still counted as waiting", w)
	}
}

func metricValue(t *testing.T, g prometheus.Gauge) float64 {
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func metricCount(t *testing.T, h prometheus.Histogram) uint64 {
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}
