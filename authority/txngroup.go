package authority

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Concurrent acquisitions of different resources, and releases, share
// etcd round trips as concurrent writes share a PostgreSQL commit
// (fence/groupcommit.go):
//
//   - One lock transaction (lock.go) or release mark (leaserelease.go) is
//     in flight at a time. One that finds none in flight is sent at once,
//     on its caller's context, as it would be alone; the others wait in
//     line. When the one in flight returns, those in line are sent as one
//     etcd Txn with no If, each nested in its Then (nest) exactly as it
//     would have been sent alone: its own If decides its branch, its
//     responses are its own, and the members share one revision. Nothing
//     waits for a group to fill: a group is what queued while the previous
//     Txn was in flight.
//   - A group holds at most one acquisition per resource, and no two
//     members put one key, nor does one compare or read a key another puts
//     (etcd refuses the first; the second would let a member see the store
//     before one write and after another, its If deciding before the
//     group's writes and its reads seeing those before it). A member that
//     cannot join stays in line, and so does every later one that conflicts
//     with it: a resource's line keeps its order, and its tokens, each a
//     revision of its own, increase. Every range a lock transaction
//     compares or reads lies under its resource's prefixes, which its
//     resource stands for; a release mark reads and compares single keys
//     of its lease.
//   - etcd counts a nested Txn's operations against --max-txn-ops together
//     with those of the Txns it is nested in (checkTxnRequest passes down
//     what is left), and bounds a request's size (--max-request-bytes):
//     a group stays within both defaults, and within maxGroup.
//   - A group that etcd refuses as a whole before applying any of it (a
//     member's lease gone, a limit set lower than the default) is sent again
//     member by member, so that the refusal is only its cause's. Any other
//     failure is every member's, as it would have been alone: etcd
//     unavailable, the outcome unknown, and each acquisition abandons its
//     lease as before.
//   - A member whose caller gives up is answered at once with its
//     context's error, as a Txn of its own would be; if it was sent, its
//     acquisition's lease is abandoned as before, and a group that meets
//     the revoked lease goes member by member.
//
// Each acquisition keeps its own etcd lease: grouping changes how many
// Txns carry the lock keys, not what they are attached to.

// maxGroup bounds the members of one group: a bigger one costs those that
// queued first the time to build, send and apply it.
const maxGroup = 32

// etcd's defaults for --max-txn-ops and --max-request-bytes (a group keeps
// to half the latter: its size is reckoned, not measured).
const (
	etcdMaxTxnOps   = 128
	maxGroupedBytes = 3 << 18 // 768 KiB
)

// txnGroup sends the lock transactions and release marks of an
// authority, grouping those that wait in line.
type txnGroup struct {
	cli *clientv3.Client
	// send commits a transaction; tests hold it to make a line form.
	send func(ctx context.Context, t txn) (txnResult, error)
	// queued, if set, is told the length of the line whenever a member
	// joins it (tests).
	queued func(n int)

	mu    sync.Mutex
	busy  bool // a transaction is in flight
	queue []*groupMember

	// groups counts the Txns sent for two members or more, grouped their
	// members.
	groups, grouped atomic.Int64
}

func newTxnGroup(cli *clientv3.Client) *txnGroup {
	return &txnGroup{cli: cli, send: func(ctx context.Context, t txn) (txnResult, error) { return t.commit(ctx, cli) }}
}

// groupMember is a transaction in line, and its answer once done is
// closed.
type groupMember struct {
	ctx context.Context
	t   txn
	// exclusive are the keys no other member of its group may put, compare
	// or read: those it stands for (a resource's) and those it puts; reads
	// the single keys it compares or reads, which no other member may put.
	exclusive, reads []string
	depth, size      int // etcd's count of its operations, its reckoned size
	done             chan struct{}
	res              txnResult
	err              error
}

// commit commits t, grouped with others if one is in flight, standing for
// the keys exclusive besides those it puts (a lock transaction, for its
// resource's lock prefix). ctx bounds the wait for its answer, and the
// transaction itself when it goes alone.
func (g *txnGroup) commit(ctx context.Context, t txn, exclusive ...string) (txnResult, error) {
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		defer g.handOn()
		return g.send(ctx, t)
	}
	m := newGroupMember(ctx, t, exclusive)
	g.queue = append(g.queue, m)
	n := len(g.queue)
	g.mu.Unlock()
	if g.queued != nil {
		g.queued(n)
	}
	select {
	case <-m.done:
		return m.res, m.err
	case <-ctx.Done():
		return txnResult{}, ctx.Err()
	}
}

func newGroupMember(ctx context.Context, t txn, exclusive []string) *groupMember {
	m := &groupMember{ctx: ctx, t: t, exclusive: exclusive, done: make(chan struct{})}
	m.depth, m.size = m.walk(t)
	return m
}

// walk records the keys t puts, compares and reads, and returns etcd's count of
// its operations (the most a path of nested Txns adds up to) and its
// reckoned size.
func (m *groupMember) walk(t txn) (depth, size int) {
	for _, c := range t.ifs {
		m.reads = append(m.reads, string(c.KeyBytes()))
		size += 2*len(c.KeyBytes()) + len(c.ValueBytes()) + 32 // its range's end is at most as long
	}
	deepest := 0
	for _, o := range append(append([]txnOp(nil), t.then...), t.els...) {
		if o.nested != nil {
			d, s := m.walk(*o.nested)
			deepest, size = max(deepest, d), size+s
			continue
		}
		switch {
		case o.op.IsPut():
			m.exclusive = append(m.exclusive, string(o.op.KeyBytes()))
		case o.op.IsGet() && len(o.op.RangeBytes()) == 0:
			m.reads = append(m.reads, string(o.op.KeyBytes()))
		}
		size += len(o.op.KeyBytes()) + len(o.op.RangeBytes()) + len(o.op.ValueBytes()) + 32
	}
	return max(len(t.ifs), len(t.then), len(t.els)) + deepest, size
}

// handOn is called when the transaction in flight has returned: the line,
// if any, goes as the next group, on a goroutine of its own.
func (g *txnGroup) handOn() {
	if ms := g.next(); ms != nil {
		go g.loop(ms)
	}
}

// loop sends groups until the line is empty.
func (g *txnGroup) loop(ms []*groupMember) {
	for ; ms != nil; ms = g.next() {
		g.run(ms)
	}
}

// next takes the next group from the line, or marks none in flight.
func (g *txnGroup) next() []*groupMember {
	g.mu.Lock()
	defer g.mu.Unlock()
	for len(g.queue) > 0 {
		if ms := g.take(); len(ms) > 0 {
			return ms
		}
	}
	g.busy = false
	return nil
}

// take removes a group from the line, in order, skipping members that
// conflict with it (and, after one, every later member that conflicts
// with that one) or would not fit; a member whose caller gave up is
// answered instead. g.mu is held.
func (g *txnGroup) take() []*groupMember {
	var ms, rest []*groupMember
	puts, reads := map[string]bool{}, map[string]bool{}
	depth, size := 0, 0
	for i, m := range g.queue {
		if m.ctx.Err() != nil {
			m.err = m.ctx.Err()
			close(m.done)
			continue
		}
		// The first member always fits: it goes alone, outside every
		// group bound, so that a member too big to nest is still sent
		// and the line never stalls.
		fits := !m.conflicts(puts, reads) && (len(ms) == 0 ||
			len(ms) < maxGroup &&
				len(ms)+1+max(depth, m.depth) <= etcdMaxTxnOps &&
				size+m.size <= maxGroupedBytes)
		// A member left in line keeps its keys from later members, so that
		// none of its resource overtakes it.
		for _, k := range m.exclusive {
			puts[k] = true
		}
		if !fits {
			rest = append(rest, m)
			if len(ms) == maxGroup {
				rest = append(rest, g.queue[i+1:]...)
				break
			}
			continue
		}
		for _, k := range m.reads {
			reads[k] = true
		}
		ms, depth, size = append(ms, m), max(depth, m.depth), size+m.size
	}
	clear(g.queue)
	g.queue = rest
	return ms
}

// conflicts says whether m puts a key others put, compare or read, or
// compares or reads one they put.
func (m *groupMember) conflicts(puts, reads map[string]bool) bool {
	for _, k := range m.exclusive {
		if puts[k] || reads[k] {
			return true
		}
	}
	for _, k := range m.reads {
		if puts[k] {
			return true
		}
	}
	return false
}

// run sends ms, a group taken from the line, and answers each member. A
// panic becomes every member's error instead of leaving callers waiting.
func (g *txnGroup) run(ms []*groupMember) {
	defer func() {
		if p := recover(); p != nil {
			for _, m := range ms {
				m.res, m.err = txnResult{}, fmt.Errorf("authority: a group of %d transactions panicked: %v", len(ms), p)
			}
		}
		for _, m := range ms {
			close(m.done)
		}
	}()
	if len(ms) == 1 {
		ms[0].res, ms[0].err = g.send(ms[0].ctx, ms[0].t)
		return
	}
	outer := txn{then: make([]txnOp, len(ms))}
	for i, m := range ms {
		outer.then[i] = nest(memberName(i), m.t)
	}
	// The group's own bound: no member's caller may cut it short for
	// the others.
	ctx, cancel := bounded(g.cli.Ctx())
	res, err := g.send(ctx, outer)
	cancel()
	switch {
	case err == nil:
		g.groups.Add(1)
		g.grouped.Add(int64(len(ms)))
		for i, m := range ms {
			m.res = res.nested(memberName(i))
		}
	case refusedWhole(err):
		var wg sync.WaitGroup
		for _, m := range ms {
			if m.ctx.Err() != nil {
				m.err = m.ctx.Err() // gone: its lease is being abandoned
				continue
			}
			wg.Go(func() { m.res, m.err = g.send(m.ctx, m.t) })
		}
		wg.Wait()
	default:
		for _, m := range ms {
			m.err = err
		}
	}
}

func memberName(i int) string { return fmt.Sprintf("acquisition %d", i) }

// refusedWhole says whether etcd refused a Txn before applying any of it
// for something that may be one member's alone: a lease not found (etcd
// checks every put's lease before it writes), or a limit on operations,
// duplicate keys or size.
func refusedWhole(err error) bool {
	for _, e := range []error{rpctypes.ErrLeaseNotFound, rpctypes.ErrTooManyOps, rpctypes.ErrDuplicateKey, rpctypes.ErrRequestTooLarge} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
