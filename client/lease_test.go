package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

func TestAcquireWriteRelease(t *testing.T) {
	proxy := newFaultProxy(t, newGateway(t, demoPolicy(t)))
	c := client.New(proxy.URL)
	ctx := context.Background()

	before := time.Now()
	l, err := c.Acquire(ctx, "account/acct-1", client.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if l.ID() == "" || l.Token() == "" || l.Resource() != "account/acct-1" || l.Err() != nil {
		t.Fatalf("lease = id %q token %q resource %q err %v", l.ID(), l.Token(), l.Resource(), l.Err())
	}
	// Sent no earlier than before, granted 10 s, margin max(1s, 100ms).
	if d := l.Deadline(); d.Before(before.Add(9*time.Second)) || d.After(time.Now().Add(9*time.Second)) {
		t.Errorf("deadline %s after the request, want 9s (10s TTL - 1s margin)", d.Sub(before))
	}
	if !testenv.WaitFor(5*time.Second, func() bool { return keepaliveGoroutines() == 1 }) {
		t.Errorf("%d keepalive goroutines with one lease, want 1", keepaliveGoroutines())
	}

	res, err := l.Write(ctx, "debit", debit("acct-1", 300))
	if err != nil {
		t.Fatal(err)
	}
	if res.Operation != "debit" || res.Resource != "account/acct-1" || res.Token != client.Unsigned(l.Token()) || res.Replayed {
		t.Errorf("result = %+v", res)
	}
	if got := balance(t, res); got != 700 {
		t.Errorf("balance after debit 300 = %d, want 700", got)
	}

	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	waitDone(t, l)
	if !errors.Is(l.Err(), client.ErrReleased) || !errors.Is(context.Cause(l.Context()), client.ErrReleased) {
		t.Errorf("after Release: Err %v, Cause %v, want ErrReleased", l.Err(), context.Cause(l.Context()))
	}
	checkNoKeepalive(t)

	writes := proxy.count("write")
	if _, err := l.Write(ctx, "debit", debit("acct-1", 1)); !errors.Is(err, client.ErrReleased) {
		t.Errorf("Write after Release: %v, want ErrReleased", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("second Release: %v", err)
	}
	if got := proxy.count("write"); got != writes {
		t.Errorf("Write after Release sent %d requests", got-writes)
	}
	if got := proxy.count("release"); got != 1 {
		t.Errorf("%d DELETE requests for two Release calls, want 1", got)
	}

	// The lock is free: the next holder gets it at once, with a newer token.
	next, err := c.Acquire(ctx, "account/acct-1", client.AcquireOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	if mustToken(t, next.Token()).Compare(mustToken(t, l.Token())) <= 0 {
		t.Errorf("token after release %s is not newer than %s", next.Token(), l.Token())
	}
	if err := next.Release(ctx); err != nil {
		t.Fatal(err)
	}
	checkNoKeepalive(t)
}

func TestAcquireLockedNamesHolder(t *testing.T) {
	c := client.New(newGateway(t, demoPolicy(t)))
	ctx := context.Background()
	holder, err := c.Acquire(ctx, "account/acct-2", client.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := holder.Release(ctx); err != nil {
			t.Error(err)
		}
		checkNoKeepalive(t)
	})

	l, err := c.Acquire(ctx, "account/acct-2", client.AcquireOptions{TTL: 10 * time.Second})
	var locked *client.LockedError
	if !errors.As(err, &locked) || l != nil {
		t.Fatalf("second Acquire = %v, %v; want *LockedError", l, err)
	}
	if locked.Resource != "account/acct-2" || locked.Holder != client.Unsigned(holder.Token()) {
		t.Errorf("LockedError = %+v, want resource account/acct-2 holder %s", locked, holder.Token())
	}
	var p *client.ProblemError
	if !errors.Is(err, client.ErrLocked) || !errors.As(err, &p) || p.Status != http.StatusConflict || p.Kind() != "locked" {
		t.Errorf("error %v: want ErrLocked and a 409 locked *ProblemError", err)
	}
	t.Logf("error: %v", err)
}

func TestAcquireRefusesBadOptions(t *testing.T) {
	proxy := newFaultProxy(t, "http://127.0.0.1:1") // never reached
	c := client.New(proxy.URL)
	for _, opts := range []client.AcquireOptions{
		{TTL: -time.Second},
		{Wait: -time.Second},
		{SafetyMargin: -time.Second},
		{TTL: time.Second, SafetyMargin: time.Second},
	} {
		if _, err := c.Acquire(context.Background(), "r", opts); !errors.Is(err, client.ErrBadOptions) {
			t.Errorf("Acquire with %+v: %v, want ErrBadOptions", opts, err)
		}
	}
	if n := proxy.count("acquire"); n != 0 {
		t.Errorf("%d requests sent for bad options", n)
	}
	if _, err := client.New("localhost:8080").Acquire(context.Background(), "r", client.AcquireOptions{}); !errors.Is(err, client.ErrBadOptions) {
		t.Errorf("Acquire on a URL without scheme: %v, want ErrBadOptions", err)
	}
}

// balance is the balance_cents of the first row of a debit or credit.
func balance(t *testing.T, res *client.Result) int64 {
	t.Helper()
	var rows []struct {
		Balance int64 `json:"balance_cents"`
	}
	if len(res.Statements) == 0 || json.Unmarshal(res.Statements[0].Rows, &rows) != nil || len(rows) != 1 {
		t.Fatalf("result %+v has no balance row", res)
	}
	return rows[0].Balance
}

func mustToken(t *testing.T, s string) tokens.Token {
	t.Helper()
	tok, err := tokens.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestAcquireRetriesALostGrant: the gateway grants the lease and its answer
// is lost on the way back. Acquire asks again with the acquisition's
// idempotency key and gets that very lease: one lease holds the lock, the
// one the caller uses, and nothing waits behind it.
func TestAcquireRetriesALostGrant(t *testing.T) {
	gw := newGateway(t, demoPolicy(t))
	proxy := newFaultProxy(t, gw)
	c := client.New(proxy.URL)
	ctx := context.Background()
	proxy.setFault("lose-answer")
	l, err := c.Acquire(ctx, "account/acct-77", client.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatalf("acquire with its first answer lost: %v", err)
	}
	defer l.Release(ctx)
	if n := proxy.count("acquire"); n != 2 {
		t.Fatalf("%d acquisitions sent, want the first and its retry", n)
	}
	st, err := client.New(gw).Observe(ctx, "account/acct-77")
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder == nil || st.Holder.Token != client.Unsigned(l.Token()) || len(st.Waiters) != 0 {
		t.Fatalf("the lock: %+v, want the caller's lease holding it and nobody waiting", st)
	}
	if _, err := l.Write(ctx, "credit", map[string]any{"account": "acct-77", "amount_cents": 1}); err != nil {
		t.Fatalf("a write with the lease: %v", err)
	}
}
