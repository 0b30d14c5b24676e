//go:build linux

package recon_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/examples/internal/holdpoint"
	"github.com/fencegw/fencegw/internal/harness/pause"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/testgw"
)

const (
	day      = "2026-10-18"
	resource = "recon/" + day
	podCount = 12
)

// story is how one telling of the story went.
type story struct {
	pods        []*pod
	frozen      int    // index of A, the pod paused mid-run
	frozenToken string // A's fencing token
}

// tell runs the story against gw, at 2-second leases: twelve pods compete
// for the day's lock; A, the first holder, is frozen right after its first
// chunk (the GC pause) and its lease expires; the others run while it
// sleeps; A resumes once the day is finished and its lease is gone, and
// goes on with the chunks it had in memory. tell returns once every pod
// has exited.
func tell(t *testing.T, bin binaries, gw *testgw.Gateway) *story {
	holdDir := t.TempDir()
	s := &story{frozen: -1}
	for range podCount {
		s.pods = append(s.pods, startPod(t, bin, gw.URL, holdDir))
	}

	// Only the lock's holder reaches the hold point, and nobody else can
	// hold the lock before A is frozen: the first one there is A.
	var a holdpoint.Held
	if !testenv.WaitFor(30*time.Second, func() bool {
		held, err := holdpoint.Waiting(holdDir, "chunk")
		if len(held) > 0 {
			a = held[0]
		}
		return err == nil && len(held) > 0
	}) {
		t.Fatalf("no pod's job posted its first chunk:\n%s", s.outputs())
	}
	s.frozen = slices.IndexFunc(s.pods, func(p *pod) bool { return p.cmd.Process.Pid == a.Ppid })
	c := client.New(gw.URL)
	lock, err := c.Observe(t.Context(), resource)
	if s.frozen < 0 || err != nil || lock.Holder == nil {
		t.Fatalf("the job at the hold point (pid %d, parent %d) is not a pod's, or its lock has no holder (%v)", a.Pid, a.Ppid, err)
	}
	s.frozenToken = lock.Holder.Token

	// The pause: `fencegw lock` stops renewing the lease, and the job
	// stops between two writes. A stopped process cannot complete the
	// system call that would see the go-ahead written next: it goes on
	// with its next chunk once resumed.
	if err := pause.Stop(a.Ppid, a.Pid); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}

	// While A sleeps, its lease expires, the next pod runs the day and
	// finishes it, and the later ones find it done. Their jobs pass the
	// hold point at once.
	if !testenv.WaitFor(40*time.Second, func() bool {
		held, _ := holdpoint.Waiting(holdDir, "chunk")
		for _, h := range held {
			if !h.Released() {
				_ = h.Release()
			}
		}
		return finished(t, gw) && !contends(t, c, s.frozenToken)
	}) {
		t.Fatalf("the day was not finished while A was frozen, or A still holds the lock:\n%s", s.outputs())
	}

	// A wakes. Its job first: it sends the chunk it had in memory before
	// its `fencegw lock` notices the lost lease and stops it (resuming
	// both at once would race the two, and the fence is what must stop
	// it). Then its `fencegw lock`, once the job has ended.
	if err := pause.Resume(a.Pid); err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(20*time.Second, func() bool { return pause.Ended(a.Pid) }) {
		t.Fatalf("A's job did not end once resumed:\n%s", s.pods[s.frozen].out)
	}
	if err := pause.Resume(a.Ppid); err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(60*time.Second, func() bool { return !slices.ContainsFunc(s.pods, func(p *pod) bool { return !p.exited() }) }) {
		t.Fatalf("not every pod exited:\n%s", s.outputs())
	}
	return s
}

// finished reports whether the day has a finished run.
func finished(t *testing.T, gw *testgw.Gateway) bool {
	var done bool
	if err := gw.Pool.QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM recon.runs WHERE day = $1)", day).Scan(&done); err != nil {
		t.Fatal(err)
	}
	return done
}

// contends reports whether token holds the day's lock or waits for it.
func contends(t *testing.T, c *client.Client, token string) bool {
	lock, err := c.Observe(t.Context(), resource)
	if err != nil {
		t.Fatal(err)
	}
	return lock.Holder != nil && lock.Holder.Token == token ||
		slices.ContainsFunc(lock.Waiters, func(w client.Contender) bool { return w.Token == token })
}

// statuses are the pods' exit statuses: A's, and the others'.
func (s *story) statuses() (frozen int, others []int) {
	for i, p := range s.pods {
		if i == s.frozen {
			frozen = p.status
		} else {
			others = append(others, p.status)
		}
	}
	return frozen, others
}

// count counts the pods whose output holds text.
func (s *story) count(text string) int {
	n := 0
	for _, p := range s.pods {
		if strings.Contains(p.out.String(), text) {
			n++
		}
	}
	return n
}

func (s *story) outputs() string {
	var b strings.Builder
	for i, p := range s.pods {
		mark := ""
		if i == s.frozen {
			mark = " (A, frozen)"
		}
		fmt.Fprintf(&b, "--- pod %d%s:\n%s", i, mark, p.out)
	}
	return b.String()
}
