package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// semaphorePolicy is goodPolicy with a semaphore: a pool of workers, at
// most three at once per pool.
const semaphorePolicy = `
kinds:
  account:
    template: "account/{account}"
  pool:
    template: "pool/{pool}"
    permits: 3
operations:
  debit:
    resource: account
    args:
      account: {type: string, max_length: 8, pattern: "acct-[0-9]+"}
      amount: {type: integer, min: 1, max: 1000}
    statements:
      - sql: UPDATE a SET b = b - :amount WHERE id = :account AND b >= :amount
  work:
    resource: pool
    args:
      pool: {type: string, max_length: 32}
    statements:
      - sql: INSERT INTO done VALUES (:pool, :_resource, :_token)
`

func TestPermits(t *testing.T) {
	p := mustParse(t, semaphorePolicy)
	if got := p.Kinds["pool"].Permits; got != 3 {
		t.Errorf("pool's Permits = %d, want 3", got)
	}
	if got := p.Kinds["account"].Permits; got != 0 {
		t.Errorf("account's Permits = %d, want 0: an exclusive lock", got)
	}
	k, err := p.Lease(nil, "pool/p1")
	if err != nil || k.Permits() != 3 {
		t.Errorf("Lease(pool/p1) = %+v, %v; want a kind of 3 permits", k, err)
	}
	if !strings.Contains(p.FenceSettings(), "semaphore of 3 permits") {
		t.Errorf("FenceSettings does not name the permits, which decide whether a token passes:\n%s", p.FenceSettings())
	}
	// A permit slot's name is no lease of its own: it would share the
	// slot's fence with the permit holders.
	k, err = p.Lease(nil, "pool/p1#2")
	if err != nil || k.Slot != 2 || k.Permits() != 3 {
		t.Errorf("Lease(pool/p1#2) = %+v, %v; want the semaphore's kind, slot 2", k, err)
	}
	if err := k.SlotError("pool/p1#2"); !errors.Is(err, ErrLeaseNotAllowed) || !strings.Contains(err.Error(), `permit 2 of the semaphore "pool/p1"`) {
		t.Errorf("SlotError(pool/p1#2) = %v; want ErrLeaseNotAllowed naming the semaphore", err)
	}
	if k, _ := p.Lease(nil, "pool/p1"); k.SlotError("pool/p1") != nil {
		t.Error("SlotError of the semaphore itself")
	}
	// A name with '#' that no semaphore owns stays a name like any other.
	if _, err := p.Lease(nil, "pool/p#x"); err != nil {
		t.Errorf("Lease(pool/p#x) = %v, want the pool semaphore (no slot suffix)", err)
	}
}

// TestPermitsRefused: every refusal names the entry and says why, and no
// policy comes back.
func TestPermitsRefused(t *testing.T) {
	base := strings.Replace(semaphorePolicy, "    permits: 3\n", "", 1)
	withPool := func(extra string) string {
		return strings.Replace(base, `    template: "pool/{pool}"`+"\n", `    template: "pool/{pool}"`+"\n"+extra, 1)
	}
	for _, tt := range []struct {
		name, src, entry, msg string
	}{
		{"zero", withPool("    permits: 0\n"), "kinds.pool.permits", "0: want 1 to 1000 holders at once"},
		{"negative", withPool("    permits: -2\n"), "kinds.pool.permits", "-2: want 1 to 1000"},
		{"absurd", withPool("    permits: 1001\n"), "kinds.pool.permits", "1001: want 1 to 1000"},
		{"huge", withPool("    permits: 99999999999\n"), "kinds.pool.permits", "want 1 to 1000"},
		{"not a number", withPool("    permits: three\n"), "", "line 7: want a whole number, got `three`"},
		{"a fraction", withPool("    permits: 2.5\n"), "kinds.pool.permits", "2.5 is not a whole number"},
		{"a fraction elsewhere", strings.Replace(withPool("    permits: 3\n"), "max_length: 32}", "max_length: 32.7}", 1), "operations.work.args.pool.max_length", "32.7 is not a whole number"},
		{"with lock_delay", withPool("    permits: 3\n    lock_delay: 5s\n"), "kinds.pool.permits", "a semaphore has no lock_delay"},
		{"with revision validation", withPool("    permits: 3\n    validation: revision\n"), "kinds.pool.permits", "validation fence or holder"},
		{"guarded", withPool("    permits: 3\n") + "guarded_tables:\n  app.pools: {resource: pool, columns: {pool: id}}\n", "guarded_tables.app.pools.resource", "pool is a semaphore (permits: 3)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse("test.yaml", []byte(tt.src))
			var pe *Error
			if !errors.As(err, &pe) || p != nil {
				t.Fatalf("Parse = %v, %v; want no policy and an *Error", p, err)
			}
			for _, prob := range pe.Problems {
				if (tt.entry == "" || prob.Entry == tt.entry) && strings.Contains(prob.Message, tt.msg) {
					return
				}
			}
			t.Fatalf("problems %+v\nwant entry %q with %q", pe.Problems, tt.entry, tt.msg)
		})
	}
}

// TestKindOfAPermitSlot: a slot's kind is its semaphore's, also where the
// semaphore's template has text after its argument, which the slot's name
// ("jobs/q1/run#2") does not match; a slot past the permits is none.
func TestKindOfAPermitSlot(t *testing.T) {
	p := mustParse(t, `
kinds:
  run:
    template: "jobs/{queue}/run"
    permits: 2
    compare: strict
operations:
  work:
    resource: run
    args:
      queue: {type: string, max_length: 32}
    statements:
      - sql: INSERT INTO done VALUES (:queue, :_resource)
`)
	run := p.Kinds["run"]
	for name, want := range map[string]*ResourceKind{"jobs/q1/run": run, "jobs/q1/run#1": run, "jobs/q1/run#2": run, "jobs/q1/run#3": nil, "jobs/q1/run#x": nil} {
		if got := p.KindOf(name); got != want {
			t.Errorf("KindOf(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestLeaseOfNestedSlotNames: a name of many slot suffixes
// (pool/p1#1#1…#1, any client may send one to GET /v1/leases) is read in
// time linear in its suffixes, as the same kind as before: each suffix
// cost two reads of the rest, so sixty of them never ended. A name past
// a resource's length is refused unread.
func TestLeaseOfNestedSlotNames(t *testing.T) {
	p := mustParse(t, semaphorePolicy)
	c := &Client{Name: "worker", operations: map[string]bool{"work": true}}
	deep := "pool/p1" + strings.Repeat("#1", 60)
	done := make(chan struct{})
	var k, kc LeaseKind
	var err, errc error
	go func() {
		defer close(done)
		k, err = p.Lease(nil, deep)
		kc, errc = p.Lease(c, deep)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // bounds a hang, not a wait: the answer takes microseconds
		t.Fatal("Lease of a name of 60 slot suffixes did not return")
	}
	if err != nil || errc != nil || k.Slot != 1 || kc.Slot != 1 || k.Permits() != 3 || kc.Permits() != 3 {
		t.Fatalf("Lease(%s) = %+v, %v; with a client %+v, %v; want slot 1 of the 3 permits' kind, as pool/p1#1#1 is", deep, k, err, kc, errc)
	}
	if _, err := p.Lease(nil, "pool/p1"+strings.Repeat("#1", 200000)); !errors.Is(err, tokens.ErrBadResource) {
		t.Fatalf("Lease of a name past %d bytes = %v, want ErrBadResource", tokens.MaxResourceLen, err)
	}
}

// TestLeaseAndKindOfAgreeOnSlots: Lease and KindOf read a permit slot by
// one rule: S#P is a slot of S when P is within S's permits, and a
// slot's name with a slot suffix is a slot of the same semaphore. A
// suffix past the permits is part of a name like any other (Lease took
// any #P for a slot, KindOf only those within the permits).
func TestLeaseAndKindOfAgreeOnSlots(t *testing.T) {
	p := mustParse(t, semaphorePolicy)
	pool := p.Kinds["pool"]
	for _, tt := range []struct {
		name     string
		wantSlot int
		wantKind *ResourceKind
	}{
		{"pool/p1", 0, pool},
		{"pool/p1#3", 3, pool},
		{"beyond the permits: pool/p1#4", 0, pool},
		{"beyond every semaphore's: pool/p1#1000", 0, pool},
		{"nested: pool/p1#2#1", 1, pool},
		{"nested beyond the permits: pool/p1#2#4", 0, pool},
		{"a slot of a name past the permits: pool/p1#4#2", 2, pool},
		{"no permit: pool/p1#0", 0, pool},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := tt.name[strings.LastIndex(tt.name, " ")+1:]
			if got := p.KindOf(name); got != tt.wantKind {
				t.Errorf("KindOf(%q) = %v, want %v", name, got, tt.wantKind)
			}
			k, err := p.Lease(nil, name)
			if err != nil || k.Slot != tt.wantSlot || k.ResourceKind != tt.wantKind {
				t.Errorf("Lease(%q) = slot %d of %v, %v; want slot %d of %v", name, k.Slot, k.ResourceKind, err, tt.wantSlot, tt.wantKind)
			}
		})
	}
}

// TestShownToken: a token of a semaphore's permit slot is shown E:R#k
// whatever it was read from (a fence row, a slot's lock key: E:R), a
// lock's E:R; unsigned either way.
func TestShownToken(t *testing.T) {
	p := mustParse(t, `
kinds:
  run:
    template: "jobs/{queue}/run"
    permits: 2
  account:
    template: "account/{id}"
operations:
  work:
    resource: run
    args:
      queue: {type: string, max_length: 32}
    statements:
      - sql: INSERT INTO done VALUES (:queue, :_resource)
  debit:
    resource: account
    args:
      id: {type: string, max_length: 32}
    statements:
      - sql: UPDATE accounts SET n = n - 1 WHERE id = :id
`)
	signed, err := tokens.Parse("1:23:AAAAAAAAAAAAAAAAAAAAAQ")
	if err != nil {
		t.Fatal(err)
	}
	plain := tokens.Token{Epoch: 1, Revision: 23}
	for _, tc := range []struct {
		resource string
		t        tokens.Token
		want     string
	}{
		{"jobs/q1/run#2", plain, "1:23#2"},
		{"jobs/q1/run#2", tokens.Token{Epoch: 1, Revision: 23, Permit: 2}, "1:23#2"},
		{"jobs/q1/run#1", signed, "1:23#1"},
		{"jobs/q1/run#3", plain, "1:23"}, // past the permits: no slot
		{"jobs/q1/run", plain, "1:23"},
		{"account/a#2", plain, "1:23"}, // a lock whose name ends like a slot's
		{"account/a", signed, "1:23"},
		{"jobs/q1/run#2", tokens.Token{}, "0:0"}, // no token stays none
	} {
		if got := p.ShownToken(tc.resource, tc.t).String(); got != tc.want {
			t.Errorf("ShownToken(%q, %s) = %s, want %s", tc.resource, tc.t, got, tc.want)
		}
	}
}
