package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/tokens"
)

// Lease names. A lease is taken on a name, and the policy says which
// names exist: those some operation writes under (a role's key rendered
// from arguments the operation accepts: "account/acct-7" for debit's
// "account/{account}" with account matching acct-[0-9]+), and those of
// the lock-only entries under leases:, for locks that fence no write (a
// leader election, a job that must not run twice). A client may lease the
// names the operations it may call write, the names of the resources its
// sql_resources list (it fences them from the SQL front), and the
// lock-only entries its own leases: lists. Any other name would let a client make lock keys and
// queues in etcd that the policy never meant.

var (
	// ErrUnknownLease: no key in the policy produces the name.
	ErrUnknownLease = errors.New("policy: unknown lease name")
	// ErrLeaseNotAllowed: the name is the policy's, not the client's to lease.
	ErrLeaseNotAllowed = errors.New("policy: lease not allowed")
)

// LeaseKind is what a lease name is to the policy: a resource some
// operation writes, or a lock-only name.
type LeaseKind struct {
	ResourceKind *ResourceKind // nil for a lock-only name
	LockOnly     string        // the leases: entry; "" for a resource
	// Slot is the permit slot the name is of a semaphore's (pool/p1#2):
	// the semaphore's to watch, never to lease (SlotError). 0 for any
	// other name.
	Slot int
}

// SlotError refuses a lease on a semaphore's permit slot, name, of kind
// k: a lock on it would share the slot's fence with the permit holders.
// nil for any other name.
func (k LeaseKind) SlotError(name string) error {
	if k.Slot == 0 {
		return nil
	}
	sem, _, _ := tokens.SplitPermitResource(name)
	return fmt.Errorf("%w: %q is permit %d of the semaphore %q: lease %q, and the gateway grants a free permit",
		ErrLeaseNotAllowed, clip.String(name, 64), k.Slot, clip.String(sem, 64), clip.String(sem, 64))
}

// LockDelay is how long the lock stays ungranted after a holder's lease
// expired: the resource's lock_delay; none for a lock-only name.
func (k LeaseKind) LockDelay() time.Duration {
	if k.ResourceKind == nil {
		return 0
	}
	return k.ResourceKind.LockDelay
}

// MaxHold bounds how long one lease may hold the lock: the resource's
// max_hold; none (0) for a lock-only name.
func (k LeaseKind) MaxHold() time.Duration {
	if k.ResourceKind == nil {
		return 0
	}
	return k.ResourceKind.MaxHold
}

// Permits is how many holders the name may have at once: the resource's
// permits, 0 for an exclusive lock (and for a lock-only name).
func (k LeaseKind) Permits() int {
	if k.ResourceKind == nil {
		return 0
	}
	return k.ResourceKind.Permits
}

// writer is one role of one operation, and what its key renders.
type writer struct {
	op      *Operation
	role    Role
	matcher *keyMatcher
}

// lockOnly is an entry of leases:.
type lockOnly struct {
	name    string
	key     *Template
	matcher *keyMatcher
}

// Lease says what name is, and whether client c may lease it (c nil:
// authentication is off, and any name of the policy may be leased). It
// returns an error wrapping ErrUnknownLease or ErrLeaseNotAllowed, naming
// why. A semaphore's permit slot (pool/p1#2) is its semaphore's kind with
// Slot set, the client's if the semaphore is: it may be watched, not
// leased (SlotError).
func (p *Policy) Lease(c *Client, name string) (LeaseKind, error) {
	if len(name) > tokens.MaxResourceLen {
		// No resource: its slot suffixes are not worth reading.
		return LeaseKind{}, tokens.CheckResource(name)
	}
	if sem, permit, _ := p.slotOf(name); permit != 0 {
		// A permit slot is its semaphore's, to watch or observe; the
		// caller of Lease refuses to lease it (SlotError).
		k, err := p.leaseNamed(c, sem)
		k.Slot = permit
		return k, err
	}
	return p.leaseNamed(c, name)
}

// leaseNamed is Lease of a name the policy's templates produce as it is, no
// permit slot.
func (p *Policy) leaseNamed(c *Client, name string) (LeaseKind, error) {
	var kinds []string
	for _, w := range p.writers {
		if _, ok := w.matcher.match(name); ok {
			if c == nil || c.MayCall(w.op.Name) {
				return LeaseKind{ResourceKind: w.role.Kind}, nil
			}
			kinds = appendNew(kinds, "a "+w.role.Kind.Name)
		}
	}
	for _, l := range p.lockOnly {
		if _, ok := l.matcher.match(name); ok {
			if c == nil || c.mayLease(l.name) {
				return LeaseKind{LockOnly: l.name}, nil
			}
			kinds = appendNew(kinds, "the lock-only lease "+l.name)
		}
	}
	if c != nil {
		if k := c.sqlKind(name); k != nil {
			return LeaseKind{ResourceKind: k}, nil
		}
	}
	shown := clip.String(name, 64)
	if len(kinds) > 0 {
		return LeaseKind{}, fmt.Errorf("%w: client %s may not lease %q: it is %s, and none of the operations the client may call writes one, nor does its leases: list it",
			ErrLeaseNotAllowed, c.Name, shown, strings.Join(kinds, " or "))
	}
	return LeaseKind{}, fmt.Errorf("%w: %q is not a name the policy's templates produce (%s) from values their operations accept; a lock that fences no write needs an entry under \"leases:\" in the policy",
		ErrUnknownLease, shown, p.leaseKeys())
}

// leaseKeys lists the templates lease names come from, for messages.
func (p *Policy) leaseKeys() string {
	var keys []string
	for _, w := range p.writers {
		keys = appendNew(keys, w.role.Kind.Template.String())
	}
	for _, l := range p.lockOnly {
		keys = appendNew(keys, l.key.String())
	}
	if len(keys) > 8 {
		keys = append(keys[:8], "…")
	}
	return strings.Join(keys, ", ")
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// compileLeases builds the matchers of lease names: every role of every
// operation, in resource, operation and role order (the first allowed
// match decides a name's kind, and so its lock-delay), then the lock-only
// entries. It runs after the operations and resources are compiled.
func compileLeases(ps *problems, p *Policy, entries map[string]string) {
	for _, name := range sortedKeys(p.Operations) {
		op := p.Operations[name]
		for _, role := range op.Roles {
			p.writers = append(p.writers, writer{op: op, role: role, matcher: roleMatcher(op, role)})
		}
	}
	slices.SortStableFunc(p.writers, func(a, b writer) int { return strings.Compare(a.role.Kind.Name, b.role.Kind.Name) })
	for _, name := range sortedKeys(entries) {
		entry := "leases." + name
		if !validName(name) {
			ps.add(entry, "lock-only lease names are lower-case letters, digits and '_', starting with a letter")
			continue
		}
		t, err := parseTemplate(entries[name])
		if err != nil {
			ps.add(entry, "%v", err)
			continue
		}
		if r := p.shapeOf(t); r != nil {
			ps.add(entry, "%q has the shape of kind %s's template: its names are fenced resources, leased by the clients that may call the operations writing them", t, r.Name)
			continue
		}
		p.lockOnly = append(p.lockOnly, lockOnly{name: name, key: t, matcher: placeholderMatcher(t)})
	}
}

// shapeOf returns the resource whose key has t's shape, if any.
func (p *Policy) shapeOf(t *Template) *ResourceKind {
	for _, name := range sortedKeys(p.Kinds) {
		if r := p.Kinds[name]; r.Template.sameShape(t) {
			return r
		}
	}
	return nil
}

// ShownToken is t as a token of resource is shown (answers, the lock
// history, the status page): unsigned, and for a semaphore's permit slot
// (pool/p1#2) with its permit, E:R#2, as its holder was granted it. A
// slot's fence row and lock key keep E:R alone, so what reads them shows
// their tokens through this, and a slot's token reads one way everywhere.
func (p *Policy) ShownToken(resource string, t tokens.Token) tokens.Token {
	t = t.Unsigned()
	if t.IsZero() {
		return t
	}
	if _, permit, _ := p.slotOf(resource); permit != 0 {
		t.Permit = permit
	}
	return t
}
