package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// semaphorePolicy is the demo policy with a pool of workers: at most two
// hold pool/{pool} at once, and each logs its work under its permit.
func semaphorePolicy(t *testing.T) string {
	t.Helper()
	return strings.Replace(demoPolicy(t, "monotonic"), "operations:\n", `  pool:
    template: "pool/{pool}"
    permits: 2

operations:
  work:
    resource: pool
    args:
      pool: {type: string, max_length: 32, pattern: "p[0-9]+"}
    statements:
      - sql: |
          INSERT INTO demo.write_log (resource, epoch, revision, operation, account, amount_cents)
          VALUES (:_resource, :_epoch, :_revision, 'work', :pool, 0)
`, 1)
}

// permitLease is a lease answer with its permit.
type permitLease struct {
	lease
	Permit, Permits int
}

func (h *harness) acquirePermit(body string) (permitLease, response) {
	h.t.Helper()
	r := h.do(http.MethodPost, "/v1/leases", nil, body)
	var l struct {
		LeaseID  string `json:"lease_id"`
		Resource string `json:"resource"`
		Token    string `json:"token"`
		Permit   int    `json:"permit"`
		Permits  int    `json:"permits"`
	}
	if r.Status != http.StatusCreated {
		return permitLease{}, r
	}
	decodeJSON(h.t, r.Body, &l)
	return permitLease{lease: lease{ID: l.LeaseID, Resource: l.Resource, Token: l.Token, Plain: plain(h.t, l.Token)}, Permit: l.Permit, Permits: l.Permits}, r
}

func (h *harness) mustAcquirePermit(pool string) permitLease {
	h.t.Helper()
	l, r := h.acquirePermit(fmt.Sprintf(`{"resource": "pool/%s", "ttl": 30, "permits": 2}`, pool))
	if r.Status != http.StatusCreated {
		h.t.Fatalf("acquire a permit of pool/%s: %d %s", pool, r.Status, r.Body)
	}
	return l
}

// writeLog lists the resources and revisions of the work logged, in order.
func (h *harness) workLog() []string {
	h.t.Helper()
	rows, err := h.pool.Query(context.Background(), "SELECT resource || ' ' || epoch || ':' || revision FROM demo.write_log WHERE operation = 'work' ORDER BY id")
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// TestSemaphorePausedPermitHolder: two permit holders write at once,
// each under its slot's fence; one pauses past its lease, a third takes
// its slot and writes, and the paused holder's write is refused with
// nothing written.
func TestSemaphorePausedPermitHolder(t *testing.T) {
	h := newHarness(t, semaphorePolicy(t))
	cli := testenv.EtcdClient(t)
	a, b := h.mustAcquirePermit("p1"), h.mustAcquirePermit("p1")
	for _, l := range []permitLease{a, b} {
		if l.Permits != 2 || l.Permit < 1 || l.Permit > 2 || l.Resource != tokens.PermitResource("pool/p1", l.Permit) || mustToken(t, l.Token).Permit != l.Permit {
			t.Fatalf("grant %+v: want permit 1 or 2 of 2, its slot's resource and a token naming it", l)
		}
	}
	if a.Permit == b.Permit {
		t.Fatalf("both holders in slot %d", a.Permit)
	}
	// Both hold and both write: each advances its own slot's fence.
	for _, l := range []permitLease{a, b} {
		if r := h.write("work", l.Token, `{"pool": "p1"}`); r.Status != http.StatusOK {
			t.Fatalf("permit %d's write: %d %s", l.Permit, r.Status, r.Body)
		}
		if got, want := h.fence(l.Resource), mustToken(t, l.Token).Unsigned(); got != fmt.Sprintf("%d:%d", want.Epoch, want.Revision) {
			t.Errorf("fence of %s = %s, want %s", l.Resource, got, want)
		}
	}
	// A third waits for a permit: both are held.
	if _, r := h.acquirePermit(`{"resource": "pool/p1", "ttl": 30}`); r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "all 2 permits are held") {
		t.Fatalf("a third permit while both are held: %d %s; want 409, all 2 permits held", r.Status, r.Body)
	}

	// a pauses past its lease: etcd ends it unmarked, as an expiry.
	id, err := authority.ParseLeaseID(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(t.Context(), clientv3.LeaseID(id)); err != nil {
		t.Fatal(err)
	}
	c := h.mustAcquirePermit("p1")
	if c.Permit != a.Permit {
		t.Fatalf("the successor got slot %d, want the paused holder's %d (the only free one)", c.Permit, a.Permit)
	}
	// Each slot is a lock to observe and watch: its holder is c now.
	var observed struct {
		Holder struct{ Token string }
	}
	decodeJSON(t, h.do(http.MethodGet, "/v1/leases?resource="+url.QueryEscape(c.Resource), nil, "").Body, &observed)
	slotToken := mustToken(t, c.Token).Unsigned().String() // E:R#k, as granted: one display of a slot's token everywhere
	if observed.Holder.Token != slotToken {
		t.Errorf("the observed holder of %s is %q, want the successor's %s", c.Resource, observed.Holder.Token, slotToken)
	}
	stream, wr := h.watch("resource="+url.QueryEscape(c.Resource), nil)
	if wr.Status != http.StatusOK {
		t.Fatalf("watch %s: %d %s", c.Resource, wr.Status, wr.Body)
	}
	if ev := stream.nextEvent(); ev.Data.Type != "state" || ev.Data.Holder == nil || ev.Data.Holder.Token != slotToken {
		t.Errorf("the watch of %s began with %+v, want its state with the successor holding", c.Resource, ev)
	}
	stream.close()
	if r := h.write("work", c.Token, `{"pool": "p1"}`); r.Status != http.StatusOK {
		t.Fatalf("the successor's write: %d %s", r.Status, r.Body)
	}

	before, logBefore := h.state(), h.workLog()
	r := h.write("work", a.Token, `{"pool": "p1"}`)
	if r.Status != http.StatusConflict || r.Problem.Kind() != "stale-token" || r.Problem.CurrentToken != slotToken || r.Problem.PresentedToken != a.Plain {
		t.Fatalf("the paused permit holder's write: %d %s; want 409 stale-token presented %s, current %s", r.Status, r.Body, a.Plain, slotToken)
	}
	if after := h.state(); after != before {
		t.Fatalf("a refused stale permit write changed the database: %s -> %s", before, after)
	}
	// b, in the other slot, is untouched by the succession in a's.
	if r := h.write("work", b.Token, `{"pool": "p1"}`); r.Status != http.StatusOK {
		t.Fatalf("the other permit's write: %d %s", r.Status, r.Body)
	}
	logAfter := h.workLog()
	if len(logAfter) != len(logBefore)+1 || !strings.HasPrefix(logAfter[len(logAfter)-1], b.Resource+" ") {
		t.Fatalf("work log %v -> %v: want one more row, b's", logBefore, logAfter)
	}
	for _, l := range []permitLease{b, c} {
		h.release(l.lease)
	}
}

// TestSemaphoreTokenRefused: a write whose token is not its semaphore's
// permit is refused (403) with nothing written: a lock's token, a slot
// the semaphore does not have, another slot's number on a permit's token,
// and a permit's token on an exclusive lock.
func TestSemaphoreTokenRefused(t *testing.T) {
	h := newHarness(t, semaphorePolicy(t))
	p := h.mustAcquirePermit("p2")
	tok := mustToken(t, p.Token)
	otherSlot := tok
	otherSlot.Permit = 3 - tok.Permit
	asLock := tok
	asLock.Permit = 0
	account := h.mustAcquire("account/acct-9", 30, 0)
	accountTok := mustToken(t, account.Token)
	accountTok.Permit = 1
	for _, tt := range []struct {
		name, op, token, body, msg string
	}{
		{"a lock's token", "work", asLock.String(), `{"pool": "p2"}`, "is a semaphore of 2 permits"},
		{"a slot the semaphore lacks", "work", fmt.Sprintf("%d:%d#3", tok.Epoch, tok.Revision), `{"pool": "p2"}`, "permit 3 of pool/p2, which has 2 permits"},
		{"another slot's number", "work", otherSlot.String(), `{"pool": "p2"}`, "not issued by this authority"},
		{"another semaphore", "work", p.Token, `{"pool": "p3"}`, "not issued by this authority"},
		{"a permit's token on a lock", "credit", accountTok.String(), debit("acct-9", 1), "which is no semaphore"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := h.state()
			r := h.write(tt.op, tt.token, tt.body)
			if r.Status != http.StatusForbidden || r.Problem.Kind() != "token-rejected" || !strings.Contains(r.Problem.Detail, tt.msg) {
				t.Fatalf("%d %s; want 403 token-rejected with %q", r.Status, r.Body, tt.msg)
			}
			if after := h.state(); after != before {
				t.Fatalf("a refused write changed the database: %s -> %s", before, after)
			}
		})
	}
	h.release(p.lease)
	h.release(account)
}

// TestSemaphoreLeaseRequestRefused: a lease request whose permits are not
// the policy's, or for a permit slot's own name, is refused with a clear
// answer and nothing written to etcd.
func TestSemaphoreLeaseRequestRefused(t *testing.T) {
	h := newHarness(t, semaphorePolicy(t))
	cli := testenv.EtcdClient(t)
	keys := func() int64 {
		var n int64
		for _, pfx := range []string{"/fencegw/queues/", "/fencegw/locks/pool%2Fp4", "/fencegw/locks/account%2Facct-8/"} {
			resp, err := cli.Get(t.Context(), pfx, clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				t.Fatal(err)
			}
			n += resp.Count
		}
		return n
	}
	for _, tt := range []struct {
		name, body string
		status     int
		msg        string
	}{
		{"zero permits", `{"resource": "pool/p4", "permits": 0}`, 400, "permits 0 is out of range [1, 1000]"},
		{"negative permits", `{"resource": "pool/p4", "permits": -3}`, 400, "permits -3 is out of range [1, 1000]"},
		{"absurd permits", `{"resource": "pool/p4", "permits": 1000000000000000000000}`, 400, "out of range [1, 1000]"},
		{"fractional permits", `{"resource": "pool/p4", "permits": 1.5}`, 400, "permits: want a whole number"},
		{"not the policy's", `{"resource": "pool/p4", "permits": 5}`, 400, "permits 5: pool/p4 is a semaphore of 2 permits in the policy"},
		{"on an exclusive lock", `{"resource": "account/acct-8", "permits": 2}`, 400, "account/acct-8 is an exclusive lock"},
		{"a slot's own name", `{"resource": "pool/p4#1"}`, 403, `permit 1 of the semaphore \"pool/p4\"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := keys()
			_, r := h.acquirePermit(tt.body)
			if r.Status != tt.status || !strings.Contains(string(r.Body), tt.msg) {
				t.Fatalf("%d %s; want %d with %q", r.Status, r.Body, tt.status, tt.msg)
			}
			if after := keys(); after != before {
				t.Fatalf("a refused lease request left keys in etcd: %d -> %d", before, after)
			}
		})
	}
}

// TestOperatorVerbsOnASemaphoreName: a semaphore's own name has no lease
// and no fence of its own (its holders hold its slots), so an operator's
// revoke or fence advance of it is refused naming the slots, with nothing
// changed; the same verbs on a slot act on it.
func TestOperatorVerbsOnASemaphoreName(t *testing.T) {
	h := newHarness(t, semaphorePolicy(t))
	l, r := h.acquirePermit(`{"resource": "pool/p7", "ttl": 30}`)
	if r.Status != http.StatusCreated {
		t.Fatalf("permit: %d %s", r.Status, r.Body)
	}
	before := h.state()
	for _, path := range []string{"/v1/admin/leases/revoke", "/v1/admin/fences/advance"} {
		r := h.do(http.MethodPost, path, nil, `{"resource": "pool/p7", "reason": "stuck worker"}`)
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "pool/p7 is a semaphore of 2 permits") || !strings.Contains(string(r.Body), "pool/p7#1 to pool/p7#2") {
			t.Fatalf("%s of the semaphore's name: %d %s; want 400 naming its slots", path, r.Status, r.Body)
		}
	}
	if after := h.state(); after != before {
		t.Fatalf("a refused operator's verb changed the state:\n%s\nwant\n%s", after, before)
	}
	r = h.do(http.MethodPost, "/v1/admin/leases/revoke", nil, `{"resource": "`+l.Resource+`", "reason": "stuck worker", "dry_run": true}`)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), l.ID) {
		t.Fatalf("revoke of the slot %s (dry run): %d %s; want its holder's lease %s", l.Resource, r.Status, r.Body, l.ID)
	}
}

// TestSemaphoreCheck: a permit holder checks its token under the
// semaphore's name or its slot's, as a write is fenced: 200 while it is
// current, 409 once its slot's next holder wrote; a token that is not the
// named slot's permit is refused; nothing is written.
func TestSemaphoreCheck(t *testing.T) {
	h := newHarness(t, semaphorePolicy(t))
	check := func(token, resource string) response {
		return h.do(http.MethodPost, "/v1/fences/check", http.Header{"Fencing-Token": {token}}, `{"resource": "`+resource+`"}`)
	}
	a := h.mustAcquirePermit("p5")
	other := tokens.PermitResource("pool/p5", 3-a.Permit)
	for _, name := range []string{"pool/p5", a.Resource} {
		r := check(a.Token, name)
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"resource":"`+a.Resource+`"`) {
			t.Fatalf("check of %s with permit %d's token: %d %s; want 200 for the slot %s", name, a.Permit, r.Status, r.Body, a.Resource)
		}
	}
	// a pauses past its lease; its slot's next holder writes.
	id, err := authority.ParseLeaseID(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.EtcdClient(t).Revoke(t.Context(), clientv3.LeaseID(id)); err != nil {
		t.Fatal(err)
	}
	b := h.mustAcquirePermit("p5")
	if b.Permit != a.Permit {
		t.Fatalf("the successor got slot %d, want %d", b.Permit, a.Permit)
	}
	if r := h.write("work", b.Token, `{"pool": "p5"}`); r.Status != http.StatusOK {
		t.Fatalf("the successor's write: %d %s", r.Status, r.Body)
	}
	before := h.state()
	fence := mustToken(t, b.Token).Unsigned() // E:R#k: a slot's fence reads as its tokens do
	for _, name := range []string{"pool/p5", a.Resource} {
		if r := check(a.Token, name); r.Status != http.StatusConflict || r.Problem.Kind() != "stale-token" || r.Problem.CurrentToken != fence.String() {
			t.Errorf("the paused holder's check of %s: %d %s; want 409 stale-token naming %s", name, r.Status, r.Body, fence)
		}
	}
	asLock := mustToken(t, b.Token)
	asLock.Permit = 0
	for _, tc := range []struct{ name, token, resource, msg string }{
		{"another slot's name", b.Token, other, fmt.Sprintf("is permit %d of pool/p5", 3-a.Permit)},
		{"a lock's token", asLock.String(), "pool/p5", "is a semaphore of 2 permits"},
		{"a lock's token for the slot", asLock.String(), b.Resource, fmt.Sprintf("is permit %d of pool/p5", b.Permit)},
		{"another semaphore", b.Token, "pool/p6", "not issued by this authority"},
	} {
		if r := check(tc.token, tc.resource); r.Status != http.StatusForbidden || r.Problem.Kind() != "token-rejected" || !strings.Contains(r.Problem.Detail, tc.msg) {
			t.Errorf("%s: %d %s; want 403 token-rejected with %q", tc.name, r.Status, r.Body, tc.msg)
		}
	}
	if after := h.state(); after != before {
		t.Fatalf("checks changed the database: %s -> %s", before, after)
	}
	h.release(b.lease)
}

// TestRevokeAPermitWaiter: an operator revokes a lease waiting in a
// semaphore's line by its id: the dry run shows it waiting for the
// semaphore, with no token yet, and changes nothing; the revoke ends its
// acquisition and takes it out of the line, and the history says who and
// why.
func TestRevokeAPermitWaiter(t *testing.T) {
	h := newHarness(t, semaphorePolicy(t))
	runHistory(t, h.node)
	cli := testenv.EtcdClient(t)
	a, b := h.mustAcquirePermit("p8"), h.mustAcquirePermit("p8")
	waited := make(chan response, 1)
	go func() {
		_, r := h.acquirePermit(`{"resource": "pool/p8", "ttl": 30, "wait": 60}`)
		waited <- r
	}()
	line := "/fencegw/queues/" + url.PathEscape("pool/p8") + "/"
	inLine := func() int64 {
		resp, err := cli.Get(t.Context(), line, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Count
	}
	if !testenv.WaitFor(30*time.Second, func() bool { return inLine() == 3 }) {
		t.Fatal("the third contender never joined the line")
	}
	newest, err := cli.Get(t.Context(), line, clientv3.WithLastCreate()...)
	if err != nil || len(newest.Kvs) != 1 {
		t.Fatalf("the newest in line: %v, %v", newest, err)
	}
	id := strings.TrimPrefix(string(newest.Kvs[0].Key), line)
	body := `{"lease_id": "` + id + `", "reason": "stuck in line", "dry_run": true}`
	want := `{"lease":{"lease_id":"` + id + `","resource":"pool/p8","waiting":true},"revoked":false,"dry_run":true}`
	if r := h.do(http.MethodPost, "/v1/admin/leases/revoke", nil, body); r.Status != http.StatusOK || strings.TrimSpace(string(r.Body)) != want {
		t.Fatalf("dry run: %d %s; want %s", r.Status, r.Body, want)
	}
	if n := inLine(); n != 3 {
		t.Fatalf("after the dry run %d in line, want 3", n)
	}
	r := h.do(http.MethodPost, "/v1/admin/leases/revoke", nil, strings.Replace(body, "true", "false", 1))
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"revoked":true`) {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	if w := <-waited; w.Status == http.StatusCreated {
		t.Fatalf("the revoked waiter was granted: %s", w.Body)
	}
	if n := inLine(); n != 2 {
		t.Fatalf("after the revoke %d in line, want the two holders", n)
	}
	h.waitHistory("pool/p8", func(es []fence.HistoryEvent) bool {
		for _, e := range es {
			if e.Event == fence.Revoked && e.LeaseID == id && e.Reason == "stuck in line" && e.Token == "" {
				return true
			}
		}
		return false
	})
	h.release(a.lease)
	h.release(b.lease)
}

// TestAPermitSlotsTokenReadsOneWay: a permit slot's token reads E:R#k
// wherever it is shown, as its grant gave it, though the slot's fence row
// and lock key keep E:R alone: an operator's fence advance (before, fence,
// holder), the lock history (the grant, the advance, the end), the status
// (fences and locks), GET /v1/leases of the slot.
func TestAPermitSlotsTokenReadsOneWay(t *testing.T) {
	h := newHarness(t, semaphorePolicy(t))
	runHistory(t, h.node)
	a := h.mustAcquirePermit("p8")
	if r := h.write("work", a.Token, `{"pool": "p8"}`); r.Status != http.StatusOK {
		t.Fatalf("a's write: %d %s", r.Status, r.Body)
	}
	tok := mustToken(t, a.Token).Unsigned()
	suffix := fmt.Sprintf("#%d", a.Permit)
	inSlot := func(s string) bool { return strings.HasSuffix(s, suffix) }

	var observed struct{ Holder struct{ Token string } }
	decodeJSON(t, h.do(http.MethodGet, "/v1/leases?resource="+url.QueryEscape(a.Resource), nil, "").Body, &observed)
	if observed.Holder.Token != tok.String() {
		t.Errorf("GET /v1/leases of %s: holder %q, want %s", a.Resource, observed.Holder.Token, tok)
	}
	h.waitStatus("the slot's fence and lock", func(v statusJSON) bool {
		var fenced, locked bool
		for _, f := range v.Fences {
			fenced = fenced || f.Resource == a.Resource && f.Token == tok.String()
		}
		for _, l := range v.Locks {
			locked = locked || l.Resource == a.Resource && l.Holder == tok.String()
		}
		return fenced && locked
	})

	r, out := h.advance(a.Resource, false)
	if r.Status != http.StatusOK || out["before"] != tok.String() || out["holder"] != tok.String() || !inSlot(fmt.Sprint(out["fence"])) {
		t.Fatalf("advance of %s: %d %s; want before and holder %s, the fence in the slot", a.Resource, r.Status, r.Body, tok)
	}
	if w := h.write("work", a.Token, `{"pool": "p8"}`); w.Status != http.StatusConflict || w.Problem.CurrentToken != out["fence"] {
		t.Fatalf("a's write after the advance: %d %s; want 409 naming the fence %v", w.Status, w.Body, out["fence"])
	}
	h.release(a.lease)
	h.waitHistory(a.Resource, func(es []fence.HistoryEvent) bool {
		seen := map[string]bool{}
		for _, e := range es {
			if !inSlot(e.Token) {
				t.Fatalf("history of %s: %+v, token not in the slot's form E:R%s", a.Resource, e, suffix)
			}
			seen[e.Event] = true
		}
		return seen[fence.Granted] && seen[fence.FenceAdvanced] && seen[fence.Released]
	})
}
