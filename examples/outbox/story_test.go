//go:build linux

package main

import (
	"cmp"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/examples/internal/holdpoint"
	"github.com/fencegw/fencegw/examples/internal/psp"
	"github.com/fencegw/fencegw/examples/internal/storytest"
	"github.com/fencegw/fencegw/internal/harness/pause"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// story is how one takeover went.
type story struct {
	fake           *psp.Fake
	deliveries     map[string]delivery
	tokenA, tokenB string // the dispatchers' tokens, unsigned
}

// takeover tells the story on a fresh gateway and provider, with queue
// (unique to the test: the lock is in the test binary's shared etcd), the
// control if noKey. It checks what both ways have in common: B delivers
// every message, A's late record is refused as stale and its `fencegw
// lock` exits 3, and the database holds one delivery per intent, B's.
func takeover(t *testing.T, bin binaries, pp pausePoint, queue string, noKey bool) *story {
	gw := startGateway(t)
	fake, pspURL := storytest.Provider(t)
	requestRefunds(t, gw.URL, queue, intents...)
	run := dispatcherRun{gateway: gw.URL, psp: pspURL, queue: queue, ttl: "2s", noKey: noKey}
	var held *storytest.Held // the provider's answer to A, when that is where A is frozen
	if pp.hold == "" {
		held = storytest.HoldFirst(t, fake)
	} else {
		run.holdDir = t.TempDir()
	}

	a := startDispatcher(t, bin, "A", run)
	lockA := a.cmd.Process.Pid
	var jobA int
	if pp.hold != "" {
		h := catch(t, run.holdDir, pp.hold)
		jobA = h.Pid
		freeze(t, jobA, lockA)
		// Frozen, it cannot see the go-ahead until it is resumed.
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
	} else {
		select {
		case <-held.Arrived():
		case <-time.After(storytest.EventTimeout):
			t.Fatalf("A's refund request never reached the provider:\n%s", a.out)
		}
		jobA = a.job(t)
		freeze(t, jobA, lockA)
	}

	// A's lease expires while it is frozen; B waits for the lock, takes
	// it, delivers every message and exits.
	runB := run
	runB.ttl, runB.holdDir = "10s", ""
	b := startDispatcher(t, bin, "B", runB)
	if st := b.wait(t); st != 0 || !strings.Contains(b.out.String(), "drained: 3 delivered, 0 left pending") {
		t.Fatalf("B exited %d; want 0, having delivered the 3 messages:\n%s", st, b.out)
	}

	// A wakes: the provider's answer, if held; its job, which goes on
	// with what it had in hand; its `fencegw lock` once the job has
	// ended, so that the fence, not the lock's SIGTERM, is what stops it.
	if held != nil {
		held.Answer()
	}
	resume(t, jobA)
	if !testenv.WaitFor(storytest.EventTimeout, func() bool { return pause.Ended(jobA) }) {
		t.Fatalf("A's job did not end once resumed:\n%s", a.out)
	}
	resume(t, lockA)
	if st := a.wait(t); st != 3 || !strings.Contains(a.out.String(), "refused by the fence") {
		t.Fatalf("A exited %d; want 3 (lease lost), its job's record refused by the fence:\n%s", st, a.out)
	}

	t.Logf("A (frozen at %s):\n%sB:\n%s", cmp.Or(pp.hold, "the provider's answer"), a.out, b.out)
	s := &story{fake: fake, deliveries: deliveries(t, gw.Pool), tokenA: tokenOf(t, a), tokenB: tokenOf(t, b)}
	for _, id := range intents {
		if d := s.deliveries[id]; d.Status != "done" || d.Via != "dispatch" || d.Token != s.tokenB {
			t.Errorf("intent %s: %+v; want done, recorded by B (%s) alone", id, d, s.tokenB)
		}
	}
	// The gateway records a refusal after answering it: wait for the row.
	var refused int
	testenv.WaitFor(storytest.EventTimeout, func() bool {
		err := gw.Pool.QueryRow(t.Context(), `SELECT count(*) FROM fencegw.rejections
			WHERE resource = $1 AND operation = 'mark_delivered' AND reason = 'stale-token' AND presented = $2`,
			"outbox/"+queue, s.tokenA).Scan(&refused)
		return err == nil && refused > 0
	})
	if refused != 1 {
		t.Errorf("fencegw.rejections holds %d refused mark_delivered of A's token %s, want 1", refused, s.tokenA)
	}
	return s
}

// tokenPattern finds a dispatcher's token in its first line.
var tokenPattern = regexp.MustCompile(`dispatch [a-z0-9-]+: token ([0-9]+:[0-9]+)`)

func tokenOf(t *testing.T, d *dispatcher) string {
	t.Helper()
	m := tokenPattern.FindStringSubmatch(d.out.String())
	if m == nil {
		t.Fatalf("%s printed no token:\n%s", d.name, d.out)
	}
	return m[1]
}

// catch waits for a process at hold point name in dir, and returns it
// still held. Until the test ends it lets go at once every other process
// at a hold point, and every later arrival at name.
func catch(t *testing.T, dir, name string) holdpoint.Held {
	t.Helper()
	caught := make(chan holdpoint.Held, 1)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var mine *holdpoint.Held // the one caught, the test's to let go
		for {
			for _, point := range []string{"read", "charged"} {
				held, _ := holdpoint.Waiting(dir, point)
				for _, h := range held {
					switch {
					case h.Released():
					case point == name && mine == nil:
						mine = &h
						caught <- h
					case point == name && h.Pid == mine.Pid:
					default:
						_ = h.Release()
					}
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
	select {
	case h := <-caught:
		return h
	case <-time.After(storytest.EventTimeout):
	}
	t.Fatalf("no dispatcher reached hold point %s", name)
	return holdpoint.Held{}
}

func freeze(t *testing.T, pids ...int) {
	t.Helper()
	if err := pause.Stop(pids...); err != nil {
		t.Fatal(err)
	}
}

func resume(t *testing.T, pid int) {
	t.Helper()
	if err := pause.Resume(pid); err != nil {
		t.Fatal(err)
	}
}
