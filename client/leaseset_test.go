package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
)

type transferArgs struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Amount int    `json:"amount_cents"`
}

// TestLeaseSetTransfer: two leases taken together write a transfer under
// both tokens; releasing the set frees both locks at once.
func TestLeaseSetTransfer(t *testing.T) {
	c := client.New(newGateway(t, demoPolicy(t)))
	ctx := t.Context()
	set, err := c.AcquireAll(ctx, []string{"account/acct-52", "account/acct-51"}, client.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if ls := set.Leases(); len(ls) != 2 || ls[0].Resource() != "account/acct-51" {
		t.Fatalf("leases %v: want both, in canonical order", ls)
	}
	res, err := set.Write(ctx, "transfer", map[string]string{"from": "account/acct-51", "to": "account/acct-52"}, transferArgs{"acct-51", "acct-52", 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Fences) != 2 || res.Fences[0].Token != client.Unsigned(set.Lease("account/acct-51").Token()) || res.Fences[1].Role != "to" {
		t.Fatalf("result fences %+v", res.Fences)
	}
	if _, err := set.Write(ctx, "transfer", map[string]string{"from": "account/acct-51", "to": "account/acct-53"}, transferArgs{"acct-51", "acct-53", 1}); !errors.Is(err, client.ErrBadOptions) {
		t.Fatalf("a role outside the set: %v, want ErrBadOptions", err)
	}
	if err := set.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"account/acct-51", "account/acct-52"} {
		l, err := c.Acquire(ctx, r, client.AcquireOptions{TTL: 5 * time.Second})
		if err != nil {
			t.Fatalf("%s after the set's release: %v", r, err)
		}
		_ = l.Release(ctx)
	}
	if _, err := set.Write(ctx, "transfer", map[string]string{"from": "account/acct-51", "to": "account/acct-52"}, transferArgs{"acct-51", "acct-52", 1}); !errors.Is(err, client.ErrReleased) {
		t.Fatalf("a write after release: %v, want ErrReleased", err)
	}
}

// TestLeaseSetAllOrNothing: when one lock cannot be had, the leases taken
// before it are released and the error is the locked one's.
func TestLeaseSetAllOrNothing(t *testing.T) {
	c := client.New(newGateway(t, demoPolicy(t)))
	ctx := t.Context()
	held, err := c.Acquire(ctx, "account/acct-55", client.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())
	_, err = c.AcquireAll(ctx, []string{"account/acct-54", "account/acct-55"}, client.AcquireOptions{TTL: 10 * time.Second})
	var locked *client.LockedError
	if !errors.As(err, &locked) || locked.Resource != "account/acct-55" {
		t.Fatalf("AcquireAll = %v, want acct-55 locked", err)
	}
	l, err := c.Acquire(ctx, "account/acct-54", client.AcquireOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatalf("acct-54 stayed locked after the failed set: %v", err)
	}
	_ = l.Release(ctx)
	for _, bad := range [][]string{nil, {"account/acct-1", "account/acct-1"}} {
		if _, err := c.AcquireAll(ctx, bad, client.AcquireOptions{}); !errors.Is(err, client.ErrBadOptions) {
			t.Errorf("AcquireAll(%q) = %v, want ErrBadOptions", bad, err)
		}
	}
}

// TestLeaseSetEndsWithAnyLease: the set is done as soon as one of its
// leases is lost, and then refuses to send.
func TestLeaseSetEndsWithAnyLease(t *testing.T) {
	base := newGateway(t, demoPolicy(t))
	c := client.New(base)
	ctx := t.Context()
	set, err := c.AcquireAll(ctx, []string{"account/acct-56", "account/acct-57"}, client.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Release(context.Background())
	req, _ := http.NewRequest(http.MethodDelete, base+"/v1/leases/"+set.Lease("account/acct-57").ID(), nil)
	resp, err := http.DefaultClient.Do(req) // revoked behind the client's back
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: %v %v", resp, err)
	}
	resp.Body.Close()
	select {
	case <-set.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the set outlived a lost lease")
	}
	if err := set.Err(); !errors.Is(err, client.ErrLeaseLost) {
		t.Fatalf("Err = %v, want ErrLeaseLost", err)
	}
	if _, err := set.Write(ctx, "transfer", map[string]string{"from": "account/acct-56", "to": "account/acct-57"}, transferArgs{"acct-56", "acct-57", 1}); !errors.Is(err, client.ErrLeaseLost) {
		t.Fatalf("write after the loss: %v, want not sent, ErrLeaseLost", err)
	}
}

// TestObserveAndBatch: a follower sees the leader's value; a batch
// applies two writes at once and a refused one names its index.
func TestObserveAndBatch(t *testing.T) {
	c := client.New(newGateway(t, demoPolicy(t)))
	ctx := t.Context()
	leader, err := c.Acquire(ctx, "account/acct-58", client.AcquireOptions{TTL: 10 * time.Second, Value: "10.0.0.7:9000"})
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Release(context.Background())
	st, err := c.Observe(ctx, "account/acct-58")
	if err != nil || st.Holder == nil || st.Holder.Value != "10.0.0.7:9000" || st.Holder.Token != client.Unsigned(leader.Token()) || len(st.Waiters) != 0 {
		t.Fatalf("Observe = %+v, %v", st, err)
	}
	res, err := c.Batch(ctx, []client.BatchWrite{
		{Operation: "credit", Args: map[string]any{"account": "acct-58", "amount_cents": 5}, Token: leader.Token()},
		{Operation: "debit", Args: map[string]any{"account": "acct-58", "amount_cents": 3}, Token: leader.Token()},
	})
	if err != nil || len(res.Writes) != 2 || balance(t, &res.Writes[1]) != 1002 {
		t.Fatalf("Batch = %+v, %v", res, err)
	}
	_, err = c.Batch(ctx, []client.BatchWrite{
		{Operation: "credit", Args: map[string]any{"account": "acct-58", "amount_cents": 5}, Token: leader.Token()},
		{Operation: "debit", Args: map[string]any{"account": "acct-58", "amount_cents": 99999}, Token: leader.Token()},
	})
	var p *client.ProblemError
	if !errors.As(err, &p) || !errors.Is(err, client.ErrPreconditionFailed) || p.Index != 1 {
		t.Fatalf("a batch with an overdraw: %v, want precondition-failed at index 1", err)
	}
}
