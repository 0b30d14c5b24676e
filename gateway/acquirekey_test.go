package gateway_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// acquireKeyed acquires with an Idempotency-Key.
func (h *harness) acquireKeyed(resource, key string, ttl int, wait float64) (lease, response) {
	h.t.Helper()
	r := h.do(http.MethodPost, "/v1/leases", http.Header{"Idempotency-Key": {key}, "Content-Type": {"application/json"}},
		fmt.Sprintf(`{"resource": %q, "ttl": %d, "wait": %g}`, resource, ttl, wait))
	var l lease
	if r.Status == http.StatusCreated {
		var body struct {
			LeaseID string `json:"lease_id"`
			Token   string `json:"token"`
		}
		decodeJSON(h.t, r.Body, &body)
		l = lease{ID: body.LeaseID, Resource: resource, Token: body.Token}
	}
	return l, r
}

// lockKeys counts the lock keys of resource in etcd: its holder and its
// waiters, one per lease.
func lockKeys(t *testing.T, resource string) int64 {
	t.Helper()
	resp, err := testenv.EtcdClient(t).Get(t.Context(), "/fencegw/locks/"+strings.ReplaceAll(resource, "/", "%2F")+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// TestIdempotentAcquisition: a retry of an acquisition with its
// Idempotency-Key gets the same lease and token while it lives, never a
// second one; the key sent for another resource is 422; once the lease is
// released the key takes a new one.
func TestIdempotentAcquisition(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const res = "account/acct-73"
	first, r := h.acquireKeyed(res, "acq-73", 30, 0)
	if r.Status != http.StatusCreated {
		t.Fatalf("acquire: %d %s", r.Status, r.Body)
	}
	again, r := h.acquireKeyed(res, "acq-73", 30, 0)
	if r.Status != http.StatusCreated || again.ID != first.ID || again.Token != first.Token {
		t.Fatalf("retry: %d %s, want lease %s with token %s again", r.Status, r.Body, first.ID, first.Token)
	}
	if n := lockKeys(t, res); n != 1 {
		t.Fatalf("%d lock keys on %s, want the one lease", n, res)
	}
	if _, r := h.acquireKeyed("account/acct-74", "acq-73", 30, 0); r.Status != http.StatusUnprocessableEntity || r.Problem.Kind() != "idempotency-mismatch" {
		t.Fatalf("the key for another resource: %d %s, want 422", r.Status, r.Body)
	}
	if _, r := h.acquireKeyed(res, "acq-73", 10, 0); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("the key with another ttl: %d %s, want 422", r.Status, r.Body)
	}
	h.release(first)
	next, r := h.acquireKeyed(res, "acq-73", 30, 0)
	if r.Status != http.StatusCreated || next.ID == first.ID {
		t.Fatalf("the key after its lease was released: %d %s, want a new lease", r.Status, r.Body)
	}
	h.release(next)
}

// TestALostGrantIsTheRetrysLease: the answer to a grant is lost on the
// wire (the client sent the acquisition, and left before reading it). Its
// retry with the same key is answered with that very lease: one lease, the
// lock held by it and used by the retry; no second one queued behind it.
func TestALostGrantIsTheRetrysLease(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const res = "account/acct-75"
	addr := strings.TrimPrefix(h.base, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"resource": %q, "ttl": 30}`, res)
	fmt.Fprintf(conn, "POST /v1/leases HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nIdempotency-Key: acq-75\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	if !testenv.WaitFor(10*time.Second, func() bool { return lockKeys(t, res) == 1 }) {
		t.Fatal("the first attempt never took the lock")
	}
	conn.Close() // its answer is lost
	retry, r := h.acquireKeyed(res, "acq-75", 30, 5)
	if r.Status != http.StatusCreated {
		t.Fatalf("retry: %d %s", r.Status, r.Body)
	}
	if n := lockKeys(t, res); n != 1 {
		t.Fatalf("%d lock keys on %s, want the first attempt's lease only", n, res)
	}
	if w := h.write("credit", retry.Token, debit("acct-75", 1)); w.Status != http.StatusOK {
		t.Fatalf("a write with the retry's token: %d %s", w.Status, w.Body)
	}
	h.release(retry)
	if n := lockKeys(t, res); n != 0 {
		t.Fatalf("%d lock keys after the release, want none: the lease the retry got is the one that held the lock", n)
	}
}

// TestARetryWaitsForItsFirstAttempt: while the first attempt waits in line,
// its retry waits with it, and both are answered with the one lease when
// its turn comes.
func TestARetryWaitsForItsFirstAttempt(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const res = "account/acct-76"
	holder := h.mustAcquire(res, 30, 0)
	type answer struct {
		l lease
		r response
	}
	first, retry := make(chan answer, 1), make(chan answer, 1)
	go func() { l, r := h.acquireKeyed(res, "acq-76", 30, 20); first <- answer{l, r} }()
	if !testenv.WaitFor(10*time.Second, func() bool { return lockKeys(t, res) == 2 }) {
		t.Fatal("the first attempt never queued")
	}
	go func() { l, r := h.acquireKeyed(res, "acq-76", 30, 20); retry <- answer{l, r} }()
	h.release(holder)
	a, b := <-first, <-retry
	if a.r.Status != http.StatusCreated || b.r.Status != http.StatusCreated || a.l.ID != b.l.ID || a.l.Token != b.l.Token {
		t.Fatalf("first %d %s, retry %d %s: want both the one lease", a.r.Status, a.r.Body, b.r.Status, b.r.Body)
	}
	if n := lockKeys(t, res); n != 1 {
		t.Fatalf("%d lock keys, want the one lease: the retry queued none of its own", n)
	}
	h.release(a.l)
}
