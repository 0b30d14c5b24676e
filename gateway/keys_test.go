package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/devserver/etcdserver"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// privateHarness is a harness on an etcd of the test's own: retiring keys
// would refuse other tests' tokens.
func privateHarness(t *testing.T) *harness {
	t.Helper()
	_, cli := testenv.PrivateEtcd(t)
	return newHarnessOn(t, demoPolicy(t, "monotonic"), cli)
}

// rotate adds a key that signs at once.
func (h *harness) rotate() {
	h.t.Helper()
	if _, err := h.auth.RotateKey(context.Background(), 0); err != nil {
		h.t.Fatal(err)
	}
}

// retire retires every key but the newest; force: even those live leases
// hold back.
func (h *harness) retire(force bool) {
	h.t.Helper()
	plan, err := h.auth.RetireKeys(context.Background(), authority.RetireOptions{Keep: 1, Force: force})
	if err != nil || len(plan) == 0 {
		h.t.Fatalf("retire: %+v, %v", plan, err)
	}
}

// keepAlive renews l over HTTP and returns the token the answer carries.
func (h *harness) keepAlive(l lease) string {
	h.t.Helper()
	r := h.do(http.MethodPost, "/v1/leases/"+l.ID+"/keepalive", nil, "")
	if r.Status != http.StatusOK {
		h.t.Fatalf("keepalive: %d %s", r.Status, r.Body)
	}
	var body struct {
		LeaseID string `json:"lease_id"`
		TTL     int64  `json:"ttl"`
		Token   string `json:"token"`
	}
	decodeJSON(h.t, r.Body, &body)
	if body.LeaseID != l.ID || body.TTL < 1 {
		h.t.Fatalf("keepalive answer %s", r.Body)
	}
	return body.Token
}

// refusedAsRetired checks that r is the 403 of a token signed by a
// retired key, worded so, and that nothing was written (before is
// h.state() before the request).
func (h *harness) refusedAsRetired(what string, r response, before string) {
	h.t.Helper()
	if r.Status != http.StatusForbidden || r.Problem.Kind() != "token-retired" || !strings.Contains(r.Problem.Detail, "signed by a retired key") ||
		strings.Contains(r.Problem.Detail, "not issued") {
		h.t.Fatalf("%s: %d %s, want 403 token-retired, signed by a retired key", what, r.Status, r.Body)
	}
	if after := h.state(); after != before {
		h.t.Fatalf("%s: refused, but the state changed", what)
	}
}

// TestRetiredKeyTokenIsRefusedAsRetired: a token the gateway issued under
// a key since retired is refused as such (403 token-retired, "signed by a
// retired key"), not as a token the gateway never issued.
func TestRetiredKeyTokenIsRefusedAsRetired(t *testing.T) {
	h := privateHarness(t)
	l := h.mustAcquire("account/acct-5", 10, 0)
	if r := h.write("credit", l.Token, debit("acct-5", 1)); r.Status != http.StatusOK {
		t.Fatalf("credit: %d %s", r.Status, r.Body)
	}
	h.release(l) // its token still writes while nobody has written since
	h.rotate()
	h.retire(false)
	before := h.state()
	h.refusedAsRetired("a write with the retired key's token", h.write("credit", l.Token, debit("acct-5", 1)), before)
}

// TestKeepAliveAcrossRotationSignsAgain: a lease kept alive across a
// rotation gets its token, same E:R, signed by the new key in the
// keepalive's answer; after the old key is retired (forced: the lease
// lives) that token writes, and the one granted is refused as a retired
// key's.
func TestKeepAliveAcrossRotationSignsAgain(t *testing.T) {
	h := privateHarness(t)
	l := h.mustAcquire("account/acct-6", 10, 0)
	defer h.release(l)
	if tok := h.keepAlive(l); tok != l.Token {
		t.Fatalf("keepalive before any rotation: token %q, want the one granted", tok)
	}
	h.rotate()
	renewed := h.keepAlive(l)
	if renewed == "" || renewed == l.Token || plain(t, renewed) != l.Plain {
		t.Fatalf("keepalive after the rotation: token %q, want %s signed again by the new key", renewed, l.Plain)
	}
	h.retire(true)
	if r := h.write("debit", renewed, debit("acct-6", 100)); r.Status != http.StatusOK {
		t.Fatalf("debit with the token signed again: %d %s", r.Status, r.Body)
	}
	before := h.state()
	h.refusedAsRetired("a write with the token granted", h.write("debit", l.Token, debit("acct-6", 100)), before)
	if got := h.balance("acct-6"); got != 900 {
		t.Fatalf("balance = %d, want 900", got)
	}
}

// TestRetiredKeyReplaysStoredAnswer: a keyed write applied before its
// token's key was retired is replayed (200, Idempotent-Replayed) on
// retry, not refused: the debit is in the database and the key says so.
// So it is for a token the authority never issued, sent with the key of
// an applied write. A new key with the retired token is refused, and
// nothing is written.
func TestRetiredKeyReplaysStoredAnswer(t *testing.T) {
	h := privateHarness(t)
	l := h.mustAcquire("account/acct-7", 10, 0)
	defer h.release(l)
	done := h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, "k-retired"), debit("acct-7", 300))
	if done.Status != http.StatusOK {
		t.Fatalf("debit: %d %s", done.Status, done.Body)
	}
	h.rotate()
	h.retire(true)
	before := h.state()
	for _, tt := range []struct{ name, token string }{
		{"the retired key's token", l.Token},
		{"a token never issued", l.Plain + ":AAAAAAAAAAAAAAAAAAAAAQ"},
		{"an unsigned token", l.Plain},
	} {
		r := h.do(http.MethodPost, "/v1/ops/debit", keyed(tt.token, "k-retired"), debit("acct-7", 300))
		if r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "true" || string(r.Body) != string(done.Body) {
			t.Fatalf("retry with %s: %d replayed=%q %s, want the stored 200 replayed", tt.name, r.Status, r.Header.Get("Idempotent-Replayed"), r.Body)
		}
	}
	h.refusedAsRetired("a new key with the retired key's token", h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, "k-new"), debit("acct-7", 300)), before)
	if got := h.balance("acct-7"); got != 700 {
		t.Fatalf("balance = %d, want 700: debited once", got)
	}
}

// TestUnknownKeyWithEtcdAwayIsUnavailable: a replica that meets a token
// signed by a key it has not loaded while etcd is unreachable cannot tell
// a rotated key from a forgery: it answers 503, outcome not-applied (also
// when asked again at once, within the keys' reload rate limit), and
// writes nothing; once etcd is back the same write is accepted.
func TestUnknownKeyWithEtcdAwayIsUnavailable(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	srv, err := etcdserver.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cli := testenv.NewEtcdClient(t, srv.Endpoints())
	h := newHarnessOn(t, demoPolicy(t, "monotonic"), cli)
	first := h.mustAcquire("account/acct-8", 10, 0) // the replica loads its keys
	h.release(first)

	// Another replica rotates and grants: this one has not loaded the new key.
	other := authority.NewEtcd(testenv.NewEtcdClient(t, srv.Endpoints()), testenv.KEK())
	if _, err := other.RotateKey(ctx, 0); err != nil {
		t.Fatal(err)
	}
	l, err := other.Acquire(ctx, "account/acct-8", authority.AcquireOptions{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	before := h.state()
	for i := range 2 {
		r := h.write("debit", l.Token.String(), debit("acct-8", 100))
		if r.Status != http.StatusServiceUnavailable || r.Problem.Kind() != "unavailable" || r.Problem.Outcome != "not-applied" {
			t.Fatalf("write %d with etcd away: %d %s, want 503 unavailable, not-applied", i+1, r.Status, r.Body)
		}
	}
	if h.state() != before {
		t.Fatal("the writes answered 503 changed state")
	}

	if srv, err = etcdserver.Start(ctx, dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cli.SetEndpoints(srv.Endpoints()...)
	var r response
	if !testenv.WaitFor(time.Minute, func() bool {
		r = h.write("debit", l.Token.String(), debit("acct-8", 100))
		return r.Status != http.StatusServiceUnavailable
	}) || r.Status != http.StatusOK {
		t.Fatalf("the write once etcd is back: %d %s, want 200", r.Status, r.Body)
	}
	if got := h.balance("acct-8"); got != 900 {
		t.Fatalf("balance = %d, want 900: debited once", got)
	}
}
