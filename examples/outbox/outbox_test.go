package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/examples/internal/psp"
	"github.com/fencegw/fencegw/examples/internal/storytest"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/testgw"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// startGateway serves this example's policy on a fresh database, guarded:
// an intent's rows take a fenced write of refund/{intent}, a queue's
// deliveries one of outbox/{queue}.
func startGateway(t *testing.T) *testgw.Gateway {
	t.Helper()
	return storytest.Gateway(t, "outbox_schema_migrations", nil)
}

// requestRefunds requests a 2500-cent refund of each intent on queue.
func requestRefunds(t *testing.T, gatewayURL, queue string, intents ...string) {
	t.Helper()
	for _, id := range intents {
		r := requestConfig{Intent: id, AmountCents: 2500, Queue: queue, TTL: 10 * time.Second, Wait: storytest.EventTimeout}
		if _, err := request(t.Context(), client.New(gatewayURL), r); err != nil {
			t.Fatalf("requesting %s: %v", id, err)
		}
	}
}

// takeQueue takes the lock on outbox/{queue} and returns its holder, whose
// events go to the test's log. The lease is released when the test ends.
func takeQueue(t *testing.T, gatewayURL, queue string) leader {
	t.Helper()
	c := client.New(gatewayURL)
	lease, err := c.Acquire(t.Context(), "outbox/"+queue, client.AcquireOptions{TTL: 10 * time.Second, Wait: storytest.EventTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lease.Release(context.Background()) })
	return leader{c: c, token: lease.Token(), queue: queue, out: logWriter{t}}
}

// logWriter writes to the test's log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// delivery is what the database says of one intent.
type delivery struct {
	Status, PSPRef, Via, Token string
}

// deliveries reads every intent's status, and for a done one its
// provider refund, who found it and the token that recorded it.
func deliveries(t *testing.T, pool *pgxpool.Pool) map[string]delivery {
	t.Helper()
	rows, err := pool.Query(t.Context(), `
		SELECT s.intent_id, s.status, coalesce(s.psp_ref, ''), coalesce(d.via, ''),
		       coalesce(d.epoch || ':' || d.revision, '')
		  FROM outbox.intent_status s LEFT JOIN outbox.deliveries d USING (message_id)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]delivery{}
	for rows.Next() {
		var id string
		var d delivery
		if err := rows.Scan(&id, &d.Status, &d.PSPRef, &d.Via, &d.Token); err != nil {
			t.Fatal(err)
		}
		out[id] = d
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// state is everything the example's tables and the fences hold, as
// text: equal states mean nothing was written.
type state struct{ Rows, Fences string }

func snapshot(t *testing.T, pool *pgxpool.Pool) state {
	t.Helper()
	var s state
	err := pool.QueryRow(t.Context(), `SELECT concat_ws(E'\n',
		(SELECT string_agg(format('%s', i), ' ' ORDER BY intent_id) FROM outbox.intents i),
		(SELECT string_agg(format('%s', m), ' ' ORDER BY id) FROM outbox.messages m),
		(SELECT string_agg(format('%s', d), ' ' ORDER BY message_id) FROM outbox.deliveries d)),
		(SELECT string_agg(format('%s', f), ' ' ORDER BY resource) FROM fencegw.fences f)`).Scan(&s.Rows, &s.Fences)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkOneChargeEach fails the test unless the provider made exactly one
// refund of each intent, and the database records that refund as its
// delivery.
func checkOneChargeEach(t *testing.T, fake *psp.Fake, ds map[string]delivery, intents ...string) {
	t.Helper()
	for _, id := range intents {
		var refs []string
		for _, c := range fake.Charges() {
			if c.Reference == id {
				refs = append(refs, c.Ref)
			}
		}
		if d := ds[id]; len(refs) != 1 || d.Status != "done" || d.PSPRef != refs[0] {
			t.Errorf("intent %s: provider refunds %v, recorded %+v; want one refund, recorded", id, refs, d)
		}
	}
}
