package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
)

// TestReadAndCheck: a holder reads and checks while its token is current;
// once a successor has written, both say it is stale, before the holder
// acts on what it read.
func TestReadAndCheck(t *testing.T) {
	c := client.New(newGateway(t, demoPolicy(t))) // the demo's balance is a read
	ctx := context.Background()
	a, err := c.Acquire(ctx, "account/acct-55", client.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Read(ctx, "balance", map[string]string{"account": "acct-55"})
	if err != nil || !strings.Contains(string(res.Statements[0].Rows), "1000") {
		t.Fatalf("read: %+v %v, want the balance", res, err)
	}
	if err := a.Check(ctx); err != nil {
		t.Fatalf("check while current: %v", err)
	}
	stale := a.Token()
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := c.Acquire(ctx, "account/acct-55", client.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release(ctx)
	if _, err := b.Write(ctx, "credit", map[string]any{"account": "acct-55", "amount_cents": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(ctx, stale, "balance", map[string]string{"account": "acct-55"}); !errors.Is(err, client.ErrStaleToken) {
		t.Fatalf("read with A's token after B wrote: %v, want ErrStaleToken", err)
	}
	if err := c.Check(ctx, stale, "account/acct-55"); !errors.Is(err, client.ErrStaleToken) {
		t.Fatalf("check of A's token after B wrote: %v, want ErrStaleToken", err)
	}
	if err := b.Check(ctx); err != nil {
		t.Fatalf("B's check: %v", err)
	}
}

// TestWriteWithADeadline: the context's deadline travels with the write
// when asked, and a write past it is refused as deadline-passed.
func TestWriteWithADeadline(t *testing.T) {
	c := client.New(newGateway(t, demoPolicy(t)))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "account/acct-69", client.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	args := map[string]any{"account": "acct-69", "amount_cents": 1}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := l.Write(wctx, "credit", args, client.WithContextDeadline()); err != nil {
		t.Fatalf("a write within its context's deadline: %v", err)
	}
	_, err = l.Write(ctx, "credit", args, client.WithNotAfter(time.Now().Add(-time.Second)))
	var p *client.ProblemError
	if !errors.As(err, &p) || !strings.HasSuffix(p.Type, "deadline-passed") {
		t.Fatalf("a write past its deadline: %v, want deadline-passed", err)
	}
}

// TestCheckRefusesAnAnswerCutShort: a check's 200 whose body is not the
// gateway's answer (cut short on the way) is ErrUnexpectedResponse, not
// "current".
func TestCheckRefusesAnAnswerCutShort(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"fences": [{"role": "", "reso`))
	}))
	defer srv.Close()
	err := client.New(srv.URL).Check(context.Background(), "1:1", "account/acct-1")
	if !errors.Is(err, client.ErrUnexpectedResponse) {
		t.Fatalf("a check answered 200 with a body cut short: %v, want ErrUnexpectedResponse", err)
	}
}
