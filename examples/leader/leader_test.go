package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/examples/internal/holdpoint"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/pause"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// TestObservation: three candidates campaign for one group. One leads and
// writes with its token; the others wait in line, and they, an observer
// and the test all see who leads. When the leader is told to stop, it
// releases the lease and the next in line leads at once, with a newer
// token.
func TestObservation(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil)
	e := election{bin: buildLeader(t), gateway: gw.URL, group: "g1"}
	a, b, c := e.start(t, "a"), e.start(t, "b"), e.start(t, "c")
	// The watcher follows by watch, not by polling: asked to look again
	// only every hour, it still sees each succession.
	watcher := e.start(t, "watcher", "--observe", "--poll", "1h")
	gc := client.New(gw.URL)

	holder, token, leader := awaitLeader(t, gc, e.group, a, b, c)
	awaitWrites(t, gw, e.group, leader.name, token, 3)
	leader.await(t, "leading leader/g1 with token "+holder.Token, "wrote 3 with token "+holder.Token)
	for _, p := range append(others(leader, a, b, c), watcher) {
		p.await(t, "following "+leader.name+" (token "+holder.Token)
	}

	if err := syscall.Kill(leader.pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := leader.cmd.Wait(); err != nil {
		t.Fatalf("%s after SIGTERM: %v, want exit 0", leader.name, err)
	}
	if !leader.saw("stepped down") {
		t.Fatalf("%s exited without stepping down", leader.name)
	}
	next, nextToken, successor := awaitLeader(t, gc, e.group, others(leader, a, b, c)...)
	if nextToken.Compare(token) <= 0 {
		t.Fatalf("%s leads with token %s after %s's %s: want a newer one", successor.name, next.Token, leader.name, holder.Token)
	}
	awaitWrites(t, gw, e.group, successor.name, nextToken, 1)
	watcher.await(t, "following "+successor.name+" (token "+next.Token)
	checkHistory(t, decisions(t, gw, e.group))
}

// TestFrozenLeader is the chapter's paused leader with real processes.
// The leader is frozen (SIGSTOP) at the instant between checking its
// lease and sending its write; its lease expires, another candidate leads
// and writes with a newer token; then the old leader resumes and sends the
// write it prepared. The fence refuses it, and the old leader steps down
// and follows the new one. The control tells the same story against a
// gateway with the fence off: the late write lands behind the new
// leader's, and the history check the story passes fails.
func TestFrozenLeader(t *testing.T) {
	t.Parallel()
	bin := buildLeader(t)
	t.Run("RefusedByTheFence", func(t *testing.T) { frozenLeader(t, bin, "g2", true) })
	t.Run("WithoutTheFenceItsWriteLands", func(t *testing.T) { frozenLeader(t, bin, "g3", false) })
}

// frozenLeader tells the frozen leader's story in group (unique to the
// test: the lock is in the test binary's shared etcd), against a gateway
// with the fence on or off.
func frozenLeader(t *testing.T, bin, group string, fenced bool) {
	gw := startGateway(t, func(c *gateway.Config) { c.UnsafeNoFence = !fenced })
	// The hold point does nothing while its folder is missing (it cannot
	// write its file there), so the candidates run free until the test
	// makes it.
	hold := filepath.Join(t.TempDir(), "hold")
	e := election{bin: bin, gateway: gw.URL, group: group, holdDir: hold}
	a, b, c := e.start(t, "a"), e.start(t, "b"), e.start(t, "c")
	gc := client.New(gw.URL)

	holder, token, old := awaitLeader(t, gc, e.group, a, b, c)
	awaitWrites(t, gw, e.group, old.name, token, 3)

	// Only the leader writes, so the first process at the hold point is
	// the leader with its next write prepared.
	if err := os.Mkdir(hold, 0o755); err != nil {
		t.Fatal(err)
	}
	var held holdpoint.Held
	if !testenv.WaitFor(20*time.Second, func() bool {
		hs, err := holdpoint.Waiting(hold, "write")
		if err != nil || len(hs) == 0 {
			return false
		}
		held = hs[0]
		return true
	}) {
		t.Fatalf("%s never reached the hold point", old.name)
	}
	if held.Pid != old.pid() {
		t.Fatalf("process %d is at the hold point, want the leader %s (%d)", held.Pid, old.name, old.pid())
	}
	if err := pause.Stop(old.pid()); err != nil {
		t.Fatalf("%s: %v", old.name, err)
	}
	// Let go while frozen: the write goes out the moment it runs again.
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	passOthers(t, hold, old.pid())

	next, nextToken, successor := awaitLeader(t, gc, e.group, others(old, a, b, c)...)
	if nextToken.Compare(token) <= 0 {
		t.Fatalf("%s leads with token %s after %s's %s: want a newer one", successor.name, next.Token, old.name, holder.Token)
	}
	firstNew := awaitWrites(t, gw, e.group, successor.name, nextToken, 1)

	// Frozen, the old leader prints nothing: its next line is the fate of
	// the write it prepared.
	mark := old.out.Len()
	if err := pause.Resume(old.pid()); err != nil {
		t.Fatal(err)
	}
	line := old.lineAfter(t, mark)
	if !fenced {
		if !strings.Contains(line, "wrote ") || !strings.Contains(line, " with token "+holder.Token) {
			t.Fatalf("%s resumed and printed %q, want its prepared write applied: the fence is off", old.name, line)
		}
		late := false
		for _, d := range decisions(t, gw, e.group) {
			late = late || d.token == token && d.id > firstNew.id
		}
		if !late {
			t.Fatalf("without the fence, no write of %s with token %s committed after %s's first with %s", old.name, holder.Token, successor.name, next.Token)
		}
		return
	}
	want := " with token " + holder.Token + " refused, the fence is at " + next.Token
	if !strings.Contains(line, "stale: write ") || !strings.Contains(line, want) {
		t.Fatalf("%s resumed and printed %q, want its prepared write refused as stale%s", old.name, line, want)
	}
	old.await(t, "stepped down", "campaigning", "following "+successor.name)

	ds := decisions(t, gw, e.group)
	for _, d := range ds {
		if d.token == token && d.id > firstNew.id {
			t.Errorf("row %d: %s's write %d with token %s committed after %s's first with %s",
				d.id, old.name, d.n, token, successor.name, next.Token)
		}
	}
	checkHistory(t, ds)
	if !testenv.WaitFor(10*time.Second, func() bool { return rejected(t, gw, e.group, holder.Token) }) {
		t.Errorf("fencegw.rejections has no stale-token refusal of %s on leader/%s", holder.Token, e.group)
	}
}
