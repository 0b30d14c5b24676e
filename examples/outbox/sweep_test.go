package main

import (
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/examples/internal/psp"
	"github.com/fencegw/fencegw/examples/internal/storytest"
)

// TestSweep: the sweeper settles the queue's intents pending for longer
// than its bound from the provider's record, and sends the provider no
// refund request. 8842 is delivered: not looked at. 8843 was refunded by
// a dispatcher that stopped before recording it: recorded, with the
// provider's refund. 8844 was never sent: left for the dispatcher. 8845
// is like 8843 but younger than the bound: not looked at. 8846's key was
// used for another amount: left pending, for a person. The dispatch that
// follows sends 8844, finds 8845's refund made under its key, and leaves
// 8846 pending, refused by the provider: one refund per intent in all.
func TestSweep(t *testing.T) {
	gw := startGateway(t)
	fake, pspURL := storytest.Provider(t)
	p := psp.NewClient(pspURL, storytest.EventTimeout)
	requestRefunds(t, gw.URL, "refunds", "8842")
	l := takeQueue(t, gw.URL, "refunds")
	if _, err := dispatch(t.Context(), l, p, true); err != nil {
		t.Fatal(err)
	}
	requestRefunds(t, gw.URL, "refunds", "8843", "8844", "8845", "8846")
	for id, amount := range map[string]int64{"8843": 2500, "8845": 2500, "8846": 100} {
		if _, _, err := p.Refund(t.Context(), psp.Request{IdempotencyKey: id, Reference: id, AmountCents: amount}); err != nil {
			t.Fatal(err)
		}
	}
	// Make all but 8845 an hour old, as an operator would: through a
	// declared bypass of the guard.
	if _, err := gw.Pool.Exec(t.Context(), `BEGIN;
		SELECT fencegw.bypass('test: age the intents');
		UPDATE outbox.messages SET created_at = created_at - interval '1 hour' WHERE intent_id <> '8845';
		COMMIT`); err != nil {
		t.Fatal(err)
	}

	before := fake.Stats()
	rep, err := sweep(t.Context(), l, p, time.Minute)
	if want := (sweepReport{Resolved: 1, NotCharged: 1, Unknown: 1}); err != nil || rep != want {
		t.Fatalf("sweep: %+v, %v; want %+v", rep, err, want)
	}
	if got, want := fake.Stats(), (psp.Stats{Charges: before.Charges, Posts: before.Posts, Gets: before.Gets + 3}); got != want {
		t.Errorf("provider after the sweep: %+v, want %+v: three lookups, no refund request", got, want)
	}
	ds := deliveries(t, gw.Pool)
	token := client.Unsigned(l.token)
	for id, want := range map[string]delivery{
		"8842": {Status: "done", PSPRef: ds["8842"].PSPRef, Via: "dispatch", Token: token},
		"8843": {Status: "done", PSPRef: charged(fake, "8843"), Via: "sweep", Token: token},
		"8844": {Status: "pending"},
		"8845": {Status: "pending"},
		"8846": {Status: "pending"},
	} {
		if ds[id] != want {
			t.Errorf("after the sweep, intent %s: %+v, want %+v", id, ds[id], want)
		}
	}

	rep2, err := dispatch(t.Context(), l, p, true)
	if want := (dispatchReport{Delivered: 2, Pending: 1}); err != nil || rep2 != want {
		t.Fatalf("dispatch: %+v, %v; want %+v", rep2, err, want)
	}
	ds = deliveries(t, gw.Pool)
	checkOneChargeEach(t, fake, ds, "8842", "8843", "8844", "8845")
	if n, d := fake.ChargesFor("8846"), ds["8846"]; n != 1 || d.Status != "pending" {
		t.Errorf("8846: %d refunds, %+v; want the one of another amount, still pending", n, d)
	}
}

// charged is the provider's only refund of intent, or "".
func charged(fake *psp.Fake, intent string) string {
	var ref string
	for _, c := range fake.Charges() {
		if c.Reference == intent {
			if ref != "" {
				return ""
			}
			ref = c.Ref
		}
	}
	return ref
}
