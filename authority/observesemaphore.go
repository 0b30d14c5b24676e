package authority

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// SlotState is one permit slot of a semaphore at one etcd revision.
type SlotState struct {
	Permit   int
	Resource string     // the slot's, tokens.PermitResource
	Holder   *Contender // nil when the slot is free; its Token carries Permit
	// Transitions counts the slot's grants so far, the holder's included.
	Transitions int64
}

// SemaphoreState is what a semaphore looks like at one etcd revision: its
// slots and its line.
type SemaphoreState struct {
	Semaphore string
	Permits   int
	Revision  int64
	Slots     []SlotState // every slot, 1 to Permits, in order
	// Waiters are the contenders in line that hold no slot, in the order
	// they will be admitted: the first maxObserved-1. Those among the
	// first Permits keys of the line are admitted and claiming a slot.
	// A key in line is no token, so their Token stays zero; their TTL is
	// not read.
	Waiters []Contender
	Waiting int64 // all of them, shown or not
}

// Transitions counts the grants of every slot.
func (st SemaphoreState) Transitions() int64 {
	var n int64
	for _, s := range st.Slots {
		n += s.Transitions
	}
	return n
}

// ObserveSemaphore reports a semaphore of permits slots without taking
// part: each slot's holder and the waiters in line. Slots and line are
// read in one etcd transaction, at one revision; then the epoch, and the
// holders' TTLs (a few at a time). The line is read up to its first
// permits+maxObserved-1 keys, with a count of all, so the cost does not
// grow with its length. ctx bounds the reads.
func (a *Etcd) ObserveSemaphore(ctx context.Context, semaphore string, permits int) (SemaphoreState, error) {
	if err := tokens.CheckResource(semaphore); err != nil {
		return SemaphoreState{}, err
	}
	if permits == 0 {
		return SemaphoreState{}, fmt.Errorf("%w: 0, want 1 to %d (a lock is observed with Observe)", ErrBadPermits, tokens.MaxPermits)
	}
	if err := checkPermits(semaphore, AcquireOptions{Permits: permits}); err != nil {
		return SemaphoreState{}, err
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	byAge := clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend)
	limit := int64(permits + maxObserved - 1)
	read, err := reads(
		// Sorted by age, each slot's holder (its oldest key) comes before
		// the slot's other keys: a slot seen within the limit is seen
		// right. Only keys no permit holder wrote (a line on a slot's own
		// name) can push a slot past it (holdersPastLimit).
		named("slots", clientv3.OpGet(slotsPrefix(semaphore), clientv3.WithPrefix(), byAge, clientv3.WithLimit(limit))),
		named("held", clientv3.OpGet(heldPrefix+url.PathEscape(semaphore+tokens.PermitSeparator), clientv3.WithPrefix(), clientv3.WithKeysOnly())),
		named("line", clientv3.OpGet(queueKeyPrefix(semaphore), clientv3.WithPrefix(), byAge, clientv3.WithLimit(limit))),
	).commit(ctx, a.cli)
	if err != nil {
		return SemaphoreState{}, unavailable("observe semaphore", err)
	}
	rev := read.Header.Revision
	a.observe(rev)
	epochs, err := a.epochsAt(ctx)
	if err != nil {
		return SemaphoreState{}, err
	}
	st := SemaphoreState{Semaphore: semaphore, Permits: permits, Revision: rev, Slots: make([]SlotState, permits)}
	for i := range st.Slots {
		st.Slots[i] = SlotState{Permit: i + 1, Resource: tokens.PermitResource(semaphore, i+1)}
	}
	slots := read.rangeOf("slots")
	for _, kv := range slots.Kvs {
		k := a.slotOf(semaphore, permits, string(kv.Key))
		if k == 0 || st.Slots[k-1].Holder != nil {
			continue
		}
		c := a.contender(ctx, kv, epochs, false)
		c.Token.Permit = k
		st.Slots[k-1].Holder = &c
	}
	if slots.More {
		if err := a.holdersPastLimit(ctx, &st, epochs); err != nil {
			return SemaphoreState{}, err
		}
	}
	for _, kv := range read.kvs("held") {
		resource, name, ok := heldKeyParts(string(kv.Key))
		if !ok || name != transitionsName {
			continue
		}
		if sem, k, ok := tokens.SplitPermitResource(resource); ok && sem == semaphore && k <= permits {
			st.Slots[k-1].Transitions = kv.Version
		}
	}
	st.line(read.kvs("line"), read.count("line"))
	a.holderTTLs(ctx, st.Slots)
	if err := ctx.Err(); err != nil {
		// Every TTL would read as 0: that is no observation.
		return SemaphoreState{}, unavailable("observe semaphore", err)
	}
	return st, nil
}

// slotOf is the slot 1 to permits of semaphore whose lock key key is, 0
// for a key of any other resource under the slots' prefix.
func (a *Etcd) slotOf(semaphore string, permits int, key string) int {
	resource, _, ok := lockKeyResource(key)
	if !ok {
		return 0
	}
	if sem, k, ok := tokens.SplitPermitResource(resource); ok && sem == semaphore && k <= permits {
		return k
	}
	return 0
}

// holdersPastLimit reads, at st's revision, the holder of each slot the
// first read did not reach: one operation per slot, in transactions of
// at most maxTxnReads.
func (a *Etcd) holdersPastLimit(ctx context.Context, st *SemaphoreState, epochs func(rev int64) int64) error {
	var missing []int
	for _, s := range st.Slots {
		if s.Holder == nil {
			missing = append(missing, s.Permit)
		}
	}
	for len(missing) > 0 {
		batch := missing[:min(len(missing), maxTxnReads)]
		missing = missing[len(batch):]
		ops := make([]txnOp, len(batch))
		for i, k := range batch {
			slot := tokens.PermitResource(st.Semaphore, k)
			ops[i] = named(slot, clientv3.OpGet(lockKeyPrefix(slot), clientv3.WithPrefix(), clientv3.WithRev(st.Revision),
				clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1)))
		}
		resp, err := reads(ops...).commit(ctx, a.cli)
		if err != nil {
			return unavailable("observe semaphore", err)
		}
		for _, k := range batch {
			if kvs := resp.kvs(tokens.PermitResource(st.Semaphore, k)); len(kvs) > 0 {
				c := a.contender(ctx, kvs[0], epochs, false)
				c.Token.Permit = k
				st.Slots[k-1].Holder = &c
			}
		}
	}
	return nil
}

// maxTxnReads keeps a transaction of reads under etcd's default bound on
// a transaction's operations (128).
const maxTxnReads = 64

// line files the keys of the line, oldest first, that hold no slot as
// waiters; count is the line's whole length. Every holder's key is among
// the first permits (admitted ones stay there), so within the keys read.
func (st *SemaphoreState) line(kvs []*mvccpb.KeyValue, count int64) {
	holders := map[LeaseID]bool{}
	for _, s := range st.Slots {
		if s.Holder != nil {
			holders[s.Holder.LeaseID] = true
		}
	}
	qpfx := queueKeyPrefix(st.Semaphore)
	st.Waiters = []Contender{}
	inLine := 0 // holders found in line
	for _, kv := range kvs {
		id, err := ParseLeaseID(strings.TrimPrefix(string(kv.Key), qpfx))
		if err != nil {
			continue
		}
		if holders[id] {
			inLine++
			continue
		}
		if len(st.Waiters) < maxObserved-1 {
			st.Waiters = append(st.Waiters, Contender{LeaseID: id, Value: string(kv.Value)})
		}
	}
	st.Waiting = max(count-int64(inLine), 0)
}

// holderTTLs reads each held slot's holder's TTL, a few at a time: in a
// row, a semaphore of many permits would cost as many round trips.
func (a *Etcd) holderTTLs(ctx context.Context, slots []SlotState) {
	var wg sync.WaitGroup
	reads := make(chan struct{}, observeReads)
	for i := range slots {
		if slots[i].Holder == nil {
			continue
		}
		wg.Go(func() {
			reads <- struct{}{}
			defer func() { <-reads }()
			slots[i].Holder.TTL = a.leaseTTL(ctx, slots[i].Holder.LeaseID)
		})
	}
	wg.Wait()
}
