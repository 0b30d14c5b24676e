package main

import (
	"errors"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/examples/internal/storytest"
)

// TestRequest: the intent and its outbox row land in one write; the same
// request again finds them and adds nothing; a request of the intent with
// another amount or queue is refused, and nothing of it is written, the
// fence included.
func TestRequest(t *testing.T) {
	gw := startGateway(t)
	c := client.New(gw.URL)
	first, err := request(t.Context(), c, requestConfig{Intent: "8842", AmountCents: 2500, Queue: "refunds", TTL: 10 * time.Second, Wait: storytest.EventTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if first.Status != "pending" || first.MessageID == 0 || first.Queue != "refunds" || first.AmountCents != 2500 {
		t.Errorf("requested: %+v; want pending, with a message on queue refunds", first)
	}
	var intents, messages int
	if err := gw.Pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM outbox.intents), (SELECT count(*) FROM outbox.messages)`).Scan(&intents, &messages); err != nil {
		t.Fatal(err)
	}
	if intents != 1 || messages != 1 {
		t.Errorf("%d intents, %d messages; want one of each", intents, messages)
	}

	for _, tc := range []struct {
		name   string
		amount int64
		queue  string
		want   error
	}{
		{"Again", 2500, "refunds", nil},
		{"AnotherAmount", 9999, "refunds", client.ErrPreconditionFailed},
		{"AnotherQueue", 2500, "payouts", client.ErrPreconditionFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, gw.Pool)
			got, err := request(t.Context(), c, requestConfig{Intent: "8842", AmountCents: tc.amount, Queue: tc.queue, TTL: 10 * time.Second, Wait: storytest.EventTimeout})
			if !errors.Is(err, tc.want) {
				t.Fatalf("request: %+v, %v; want %v", got, err, tc.want)
			}
			after := snapshot(t, gw.Pool)
			switch {
			case err == nil && got != first:
				t.Errorf("again: %+v, want %+v", got, first)
			case err == nil && (after.Rows != before.Rows || after.Fences == before.Fences):
				t.Errorf("again: rows\n %s\nthen\n %s\nfences %s then %s; want the same rows, the fence of refund/8842 moved",
					before.Rows, after.Rows, before.Fences, after.Fences)
			case err != nil && before != after:
				t.Errorf("refused, yet the state changed:\n got %+v\nwant %+v", after, before)
			}
		})
	}
}
