package torture

import (
	"path/filepath"
	"testing"
	"time"
)

// TestClockPage: what the nemesis writes in a worker's page, the worker's
// clock reads at once, in a second mapping as in the worker's process: a
// wall clock stepped back moves only the wall reading; a suspend's lag
// holds the monotonic reading back; a suspend request is taken once, or
// withdrawn if not taken.
func TestClockPage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clock")
	nemesis, err := mapClockPage(path)
	if err != nil {
		t.Fatal(err)
	}
	defer nemesis.close()
	worker, err := mapClockPage(path)
	if err != nil {
		t.Fatal(err)
	}
	defer worker.close()
	clk := pageClock{worker}

	nemesis.setOffsets(-3*time.Second, 2500*time.Millisecond)
	if step, lag := worker.offsets(); step != -3*time.Second || lag != 2500*time.Millisecond {
		t.Fatalf("offsets %v, %v, want -3s, 2.5s", step, lag)
	}
	before := time.Now()
	got := clk.Now()
	after := time.Now()
	if w := got.Round(0); w.Before(before.Add(-3*time.Second).Round(0)) || w.After(after.Add(-3*time.Second).Round(0)) {
		t.Errorf("wall reading %v, want 3 s before %v", w, before)
	}
	if m := before.Sub(got); m > 2500*time.Millisecond || m < 2500*time.Millisecond-after.Sub(before) {
		t.Errorf("monotonic reading %v behind, want 2.5 s", m)
	}

	if !nemesis.askSuspend() || nemesis.askSuspend() {
		t.Fatal("a second request while one is pending")
	}
	if !worker.takeSuspend() || worker.takeSuspend() || nemesis.withdrawSuspend() {
		t.Fatal("a request taken twice, or withdrawn once taken")
	}
	nemesis.suspendDone()
	if !nemesis.askSuspend() || !nemesis.withdrawSuspend() || worker.takeSuspend() {
		t.Fatal("a withdrawn request was taken")
	}
}

// TestGatewayClock: a gateway's clock (serve --unsafe-torture-clock) is
// the real one with the step the nemesis writes in its page on the wall
// reading and the lag on the monotonic reading (ahead, for a lag below
// zero), read at once.
func TestGatewayClock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway-clock")
	nemesis, err := mapClockPage(path)
	if err != nil {
		t.Fatal(err)
	}
	defer nemesis.close()
	now, err := GatewayClock(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct{ step, lag time.Duration }{{9 * time.Second, 0}, {-9 * time.Second, 0}, {0, -4 * time.Second}, {0, 0}} {
		nemesis.setOffsets(o.step, o.lag)
		before := time.Now()
		got := now()
		after := time.Now()
		if w := got.Round(0); w.Before(before.Add(o.step).Round(0)) || w.After(after.Add(o.step).Round(0)) {
			t.Errorf("%+v: wall reading %v, want %v from %v", o, w, o.step, before)
		}
		if m := got.Sub(before); m < -o.lag || m > -o.lag+after.Sub(before) {
			t.Errorf("%+v: monotonic reading %v from the true one, want %v", o, m, -o.lag)
		}
	}
}
