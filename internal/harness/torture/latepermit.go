package torture

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/torture/check"
)

// latePermitWrite is the late holder of a semaphore's permit, on
// sem/nemesis (semPermits of them), beside the holder of the other slot:
// T0 writes in its slot k and lets go; T1 takes slot k while T2 holds
// the other; T2 writes, T1 writes, T2 writes again; then T0 writes, late.
// With fencing, slot k's fence refuses T0's late write. Without, it lands
// after T1's in slot k (a stale write), and T0, T1 and T2 are three
// writers of a semaphore of two at once around T1's write: the checker
// must report both, whatever the workers' random pauses did. It reports
// whether T0's late write was answered for certain, applied or refused.
func (s *twoHolders) latePermitWrite(ctx context.Context) bool {
	s.round++
	opts := client.AcquireOptions{TTL: probeTTL, Wait: probeWait, Permits: semPermits}
	name := "sem/" + wentBackResource
	c := s.c[s.round%len(s.c)]
	actx, cancel := context.WithTimeout(ctx, (semPermits+2)*(probeWait+5*time.Second))
	defer cancel()
	intent := func(what string) string { return fmt.Sprintf("%s-%d-%s", s.intents(), s.round, what) }

	first, err := c.Acquire(actx, name, opts)
	if err != nil {
		return false
	}
	s.slot = first.Resource()
	wrote := s.write(ctx, s.round, first.Token(), intent("first")) == check.TypeOK
	_ = first.Release(actx)
	if !wrote {
		return false
	}
	var next, other *client.Lease
	var held []*client.Lease
	defer func() {
		for _, l := range held {
			_ = l.Release(context.WithoutCancel(ctx))
		}
	}()
	// A lease of an earlier round may hold a slot until its TTL: take
	// permits until both slots are this round's.
	for range semPermits + 1 {
		l, err := c.Acquire(actx, name, opts)
		if err != nil {
			return false
		}
		held = append(held, l)
		switch {
		case l.Permit() == first.Permit() && next == nil:
			next = l
		case l.Permit() != first.Permit() && other == nil:
			other = l
		}
		if next != nil && other != nil {
			break
		}
	}
	if next == nil || other == nil {
		return false
	}
	for _, w := range []struct {
		l    *client.Lease
		what string
	}{{other, "other-1"}, {next, "new"}, {other, "other-2"}} {
		s.slot = w.l.Resource()
		if s.write(ctx, s.round, w.l.Token(), intent(w.what)) != check.TypeOK {
			return false
		}
	}
	s.slot = first.Resource()
	return s.write(ctx, s.round, first.Token(), intent("old")) != check.TypeInfo
}
