package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegw/fencegw/client"
)

func ExampleClient_Acquire() {
	gw := startExampleGateway() // a real gateway, PostgreSQL and etcd; a service knows its gateway's URL
	defer gw.Close()
	ctx := context.Background()
	c := client.New(gw.URL)

	lease, err := c.Acquire(ctx, "account/acct-91", client.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	res, err := lease.Write(ctx, "debit", map[string]any{"account": "acct-91", "amount_cents": 300})
	if err != nil {
		fmt.Println("debit:", err)
		return
	}
	fmt.Println("rows affected:", res.Statements[0].RowsAffected)
	fmt.Println("rows:", string(res.Statements[0].Rows))

	if err := lease.Release(ctx); err != nil {
		fmt.Println("release:", err)
	}
	<-lease.Done()
	fmt.Println("lease:", lease.Err())
	_, err = lease.Write(ctx, "debit", map[string]any{"account": "acct-91", "amount_cents": 300})
	fmt.Println("debit after release:", err)
	// Output:
	// rows affected: 1
	// rows: [{"id":"acct-91","balance_cents":700}]
	// lease: client: lease released
	// debit after release: write debit: not sent: client: lease released
}

// A paused holder's late write is refused by the fence, not by the client:
// the GC-pause timeline of the README.
func ExampleStaleTokenError() {
	gw := startExampleGateway()
	defer gw.Close()
	ctx := context.Background()
	c := client.New(gw.URL)
	opts := client.AcquireOptions{TTL: 10 * time.Second}
	debit := map[string]any{"account": "acct-92", "amount_cents": 100}

	a, err := c.Acquire(ctx, "account/acct-92", opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	tokenA := a.Token()
	_ = a.Release(ctx) // A "pauses" and loses its lease
	b, err := c.Acquire(ctx, "account/acct-92", opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Release(ctx)
	if _, err := b.Write(ctx, "debit", debit); err != nil {
		fmt.Println(err)
		return
	}

	// A wakes up and sends the write it prepared with its token.
	_, err = c.Write(ctx, tokenA, "debit", debit)
	var stale *client.StaleTokenError
	if errors.As(err, &stale) {
		fmt.Println("refused:", stale.Problem.Kind(), stale.Problem.Status)
		fmt.Println("presented A's token:", stale.Presented == client.Unsigned(tokenA))
		fmt.Println("the fence is at B's token:", stale.Current == client.Unsigned(b.Token()))
	}
	fmt.Println("errors.Is ErrStaleToken:", errors.Is(err, client.ErrStaleToken))
	// Output:
	// refused: stale-token 409
	// presented A's token: true
	// the fence is at B's token: true
	// errors.Is ErrStaleToken: true
}

// Retrying a write whose outcome is unknown (a 503, a broken connection)
// with the same Idempotency-Key runs it at most once.
func ExampleClient_Write() {
	gw := startExampleGateway()
	defer gw.Close()
	ctx := context.Background()
	c := client.New(gw.URL)
	lease, err := c.Acquire(ctx, "account/acct-93", client.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lease.Release(ctx)
	// Under `fencegw lock account/acct-93 -- CMD`, CMD would take its
	// token from os.Getenv("FENCING_TOKEN") instead.
	token := lease.Token()

	key := client.NewIdempotencyKey()
	credit := map[string]any{"account": "acct-93", "amount_cents": 50}
	for range 2 {
		res, err := c.Write(ctx, token, "credit", credit, client.WithIdempotencyKey(key))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(string(res.Statements[0].Rows), "replayed:", res.Replayed)
	}
	// Output:
	// [{"id":"acct-93","balance_cents":1050}] replayed: false
	// [{"id":"acct-93","balance_cents":1050}] replayed: true
}

// A transfer writes two accounts, each under its own lock: the set takes
// both leases in canonical order and sends one token per role.
func ExampleClient_AcquireAll() {
	gw := startExampleGateway()
	defer gw.Close()
	ctx := context.Background()
	c := client.New(gw.URL)

	set, err := c.AcquireAll(ctx, []string{"account/acct-93", "account/acct-94"}, client.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	defer set.Release(ctx)
	roles := map[string]string{"from": "account/acct-93", "to": "account/acct-94"}
	res, err := set.Write(ctx, "transfer", roles, map[string]any{"from": "acct-93", "to": "acct-94", "amount_cents": 250})
	if err != nil {
		fmt.Println("transfer:", err)
		return
	}
	for _, f := range res.Fences {
		fmt.Println("fenced", f.Role, f.Resource)
	}
	fmt.Println("from:", string(res.Statements[0].Rows))
	fmt.Println("to:", string(res.Statements[1].Rows))
	// Output:
	// fenced from account/acct-93
	// fenced to account/acct-94
	// from: [{"id":"acct-93","balance_cents":750}]
	// to: [{"id":"acct-94","balance_cents":1250}]
}
