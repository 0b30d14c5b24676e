package policy

import (
	"fmt"

	"github.com/fencegw/fencegw/tokens"
)

// Semaphores. A resource with permits: N is a semaphore: up to N leases
// hold each of its names at once, each one slot with a lock and a fence
// of its own (tokens.PermitResource), so that a permit holder paused past
// its lease is refused once its slot has a new holder, as a lock's would
// be. What makes no sense for slots is refused here, not ignored:
//   - lock_delay: withholding a slot after its holder expired is not
//     built; the slot's fence already refuses the expired holder.
//   - validation: revision: a permit's slot is bound to its token by the
//     signature, which revision validation ignores; a holder of one slot
//     could then write another's fence, and N+1 would write at once.
//   - guarded tables (guarded.go): the guard matches a row's resource to
//     the write's fenced resource, and a semaphore's writes are fenced
//     under their slot's, which no row names.

// compilePermits reads fr's permits into r; false if it is refused.
func compilePermits(ps *problems, entry string, fr fileKind, r *ResourceKind) bool {
	if fr.Permits == nil {
		return true
	}
	n := *fr.Permits
	switch {
	case n < 1 || n > tokens.MaxPermits:
		ps.add(entry+".permits", "%d: want 1 to %d holders at once (leave permits out for an exclusive lock)", n, tokens.MaxPermits)
		return false
	case r.LockDelay > 0:
		ps.add(entry+".permits", "a semaphore has no lock_delay: each permit slot's fence refuses a holder whose lease expired; remove one of the two")
		return false
	case r.Validation == tokens.ValidateRevision:
		ps.add(entry+".permits", "a semaphore needs validation fence or holder: its tokens' signatures bind each holder to its permit slot, and revision validation ignores them")
		return false
	}
	r.Permits = n
	return true
}

// slotOf returns the semaphore whose permit slot name is, the permit and
// the semaphore's kind; permit 0 and no kind if name is no slot. A name
// S#P is permit P's slot of S when S is of a semaphore's kind of P
// permits or more (a slot past the permits is a name like any other).
// A slot's name with a slot suffix (pool/p1#2#1) is a slot of the same
// semaphore, the last suffix's. Each suffix is read once: the clients'
// names, of many suffixes, cost time linear in them.
func (p *Policy) slotOf(name string) (semaphore string, permit int, kind *ResourceKind) {
	sem, permit, ok := tokens.SplitPermitResource(name)
	if !ok {
		return "", 0, nil
	}
	semaphore = sem
	if inner, _, k := p.slotOf(sem); k != nil {
		semaphore, kind = inner, k
	} else {
		kind = p.templateKind(sem)
	}
	if kind == nil || permit > kind.Permits {
		return "", 0, nil
	}
	return semaphore, permit, kind
}

// permitsText describes a kind's permits for Describe.
func permitsText(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", semaphore of %d permits", n)
}
