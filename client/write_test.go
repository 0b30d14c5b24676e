package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestStaleWriteRefused is the GC-pause timeline: A's lease ends, B takes
// the lock and writes, then A writes with its old token and is refused.
func TestStaleWriteRefused(t *testing.T) {
	c := client.New(newGateway(t, demoPolicy(t)))
	ctx := context.Background()
	opts := client.AcquireOptions{TTL: 10 * time.Second}
	a, err := c.Acquire(ctx, "account/acct-11", opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write(ctx, "debit", debit("acct-11", 100)); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := c.Acquire(ctx, "account/acct-11", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release(ctx)
	if _, err := b.Write(ctx, "debit", debit("acct-11", 300)); err != nil {
		t.Fatal(err)
	}

	res, err := c.Write(ctx, a.Token(), "debit", debit("acct-11", 100))
	var stale *client.StaleTokenError
	if !errors.As(err, &stale) || res != nil {
		t.Fatalf("write with A's token = %+v, %v; want *StaleTokenError", res, err)
	}
	want := client.StaleTokenError{Resource: "account/acct-11", Presented: client.Unsigned(a.Token()), Current: client.Unsigned(b.Token())}
	if stale.Resource != want.Resource || stale.Presented != want.Presented || stale.Current != want.Current {
		t.Errorf("StaleTokenError = %+v, want %+v", stale, want)
	}
	var p *client.ProblemError
	if !errors.Is(err, client.ErrStaleToken) || !errors.As(err, &p) || p.Status != http.StatusConflict || p.Operation != "debit" {
		t.Errorf("error %v: want ErrStaleToken and a 409 *ProblemError of operation debit", err)
	}
	t.Logf("error: %v", err)

	// B's debit is the only one after A's first.
	res, err = b.Write(ctx, "credit", debit("acct-11", 1))
	if err != nil {
		t.Fatal(err)
	}
	if got := balance(t, res); got != 1000-100-300+1 {
		t.Errorf("balance %d, want %d", got, 1000-100-300+1)
	}
}

func TestWriteIdempotencyKey(t *testing.T) {
	c := client.New(newGateway(t, demoPolicy(t)))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "account/acct-12", client.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)

	key := client.NewIdempotencyKey()
	first, err := l.Write(ctx, "debit", debit("acct-12", 250), client.WithIdempotencyKey(key))
	if err != nil {
		t.Fatal(err)
	}
	retry, err := l.Write(ctx, "debit", debit("acct-12", 250), client.WithIdempotencyKey(key))
	if err != nil {
		t.Fatal(err)
	}
	if first.Replayed || !retry.Replayed {
		t.Errorf("Replayed: first %v, retry %v; want false, true", first.Replayed, retry.Replayed)
	}
	if balance(t, first) != 750 || balance(t, retry) != 750 {
		t.Errorf("balances %d and %d, want the first write's 750 twice", balance(t, first), balance(t, retry))
	}
	// Without the option every call is a new write.
	for want := int64(740); want >= 730; want -= 10 {
		res, err := l.Write(ctx, "debit", debit("acct-12", 10))
		if err != nil {
			t.Fatal(err)
		}
		if res.Replayed || balance(t, res) != want {
			t.Errorf("unkeyed write: replayed %v, balance %d; want a new write to %d", res.Replayed, balance(t, res), want)
		}
	}

	_, err = l.Write(ctx, "debit", debit("acct-12", 1), client.WithIdempotencyKey(key))
	if !errors.Is(err, client.ErrIdempotencyMismatch) {
		t.Errorf("key reused with other arguments: %v, want ErrIdempotencyMismatch", err)
	}
}

// TestWriteProblems checks that the gateway's refusals decode to the
// sentinel of their kind.
func TestWriteProblems(t *testing.T) {
	proxy := newFaultProxy(t, newGateway(t, demoPolicy(t)))
	c := client.New(proxy.URL)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "account/acct-13", client.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)

	tests := []struct {
		name      string
		token, op string
		args      any
		fault     string
		status    int
		kind      string
		want      error
	}{
		{"no token", "", "debit", debit("acct-13", 1), "", 428, "token-required", client.ErrTokenRequired},
		{"malformed token", "one:two", "debit", debit("acct-13", 1), "", 400, "bad-request", client.ErrBadRequest},
		{"token never issued", "1:999999999", "debit", debit("acct-13", 1), "", 403, "token-rejected", client.ErrTokenRejected},
		{"unknown operation", l.Token(), "withdraw", debit("acct-13", 1), "", 404, "unknown-operation", client.ErrUnknownOperation},
		{"missing argument", l.Token(), "debit", map[string]any{"account": "acct-13"}, "", 400, "bad-request", client.ErrBadRequest},
		{"insufficient balance", l.Token(), "debit", debit("acct-13", 5000), "", 409, "precondition-failed", client.ErrPreconditionFailed},
		{"nil arguments", l.Token(), "debit", nil, "", 400, "bad-request", client.ErrBadRequest},
		{"proxy 502 page", l.Token(), "debit", debit("acct-13", 1), "502", 502, "", client.ErrUnavailable},
		{"load balancer 503 page", l.Token(), "debit", debit("acct-13", 1), "503", 503, "", client.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy.setFault(tt.fault)
			defer proxy.setFault("")
			res, err := c.Write(ctx, tt.token, tt.op, tt.args)
			if !errors.Is(err, tt.want) || res != nil {
				t.Fatalf("Write = %+v, %v; want %v", res, err, tt.want)
			}
			var p *client.ProblemError
			var r *client.ResponseError
			switch {
			case tt.kind != "" && (!errors.As(err, &p) || p.Kind() != tt.kind || p.Status != tt.status):
				t.Errorf("error %v: want a %d %s *ProblemError", err, tt.status, tt.kind)
			case tt.kind == "" && (!errors.As(err, &r) || r.Status != tt.status || !errors.Is(err, client.ErrUnexpectedResponse)):
				t.Errorf("error %v: want a %d *ResponseError", err, tt.status)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "write "+tt.op+": ") || !strings.Contains(msg, fmt.Sprint(tt.status)) {
				t.Errorf("message %q does not name the operation and status", msg)
			}
		})
	}
}

func TestBearerToken(t *testing.T) {
	const secret = "billing-s3cret"
	sum := sha256.Sum256([]byte(secret))
	pol := demoPolicy(t) + fmt.Sprintf("\nclients:\n  billing:\n    token_sha256: %s\n    operations: [credit]\n", hex.EncodeToString(sum[:]))
	base := newGateway(t, pol)
	ctx := context.Background()
	opts := client.AcquireOptions{TTL: 10 * time.Second}

	_, err := client.New(base).Acquire(ctx, "account/acct-14", opts)
	if !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("Acquire without a bearer token: %v, want ErrUnauthorized", err)
	}
	_, err = client.New(base, client.WithBearerToken("wrong")).Acquire(ctx, "account/acct-14", opts)
	if !errors.Is(err, client.ErrUnauthorized) || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("Acquire with a wrong bearer token: %v, want ErrUnauthorized without the token", err)
	}

	clk := newFakeClock()
	start := clk.Now()
	c := client.New(base, client.WithBearerToken(secret), client.WithClock(clk))
	l, err := c.Acquire(ctx, "account/acct-14", opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write(ctx, "credit", debit("acct-14", 5)); err != nil {
		t.Errorf("credit: %v", err)
	}
	if _, err := l.Write(ctx, "debit", debit("acct-14", 5)); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("debit, not among billing's operations: %v, want ErrForbidden", err)
	}
	// Keepalives carry the token too: the one at TTL/3 moves the deadline.
	clk.waitTimers(t, 2)
	clk.Advance(opts.TTL / 3)
	want := start.Add(opts.TTL/3 + opts.TTL - opts.TTL/10)
	if !testenv.WaitFor(5*time.Second, func() bool { return l.Deadline().Equal(want) }) {
		t.Errorf("deadline %s after the acquire, want %s: the keepalive failed", l.Deadline().Sub(start), want.Sub(start))
	}
	if err := l.Release(ctx); err != nil || !errors.Is(l.Err(), client.ErrReleased) {
		t.Errorf("Release: %v; Err %v", err, l.Err())
	}
	checkNoKeepalive(t)
}
