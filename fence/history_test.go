package fence_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/fencegw/fencegw/fence"
)

// TestHistoryKeepsOneEndPerLease: every replica records the ends it sees;
// a lease keeps its first end and one row per event, however often and in
// whatever batches they come. Fence advances (no lease) all stay.
func TestHistoryKeepsOneEndPerLease(t *testing.T) {
	h := newDB(t)
	ev := func(event, lease string) fence.HistoryEvent {
		return fence.HistoryEvent{Resource: "r", Event: event, LeaseID: lease, Token: "1:5"}
	}
	for _, batch := range [][]fence.HistoryEvent{
		{ev(fence.Granted, "a"), ev(fence.Expired, "a"), ev(fence.Expired, "a")}, // two replicas, one batch
		{ev(fence.Granted, "a"), ev(fence.Released, "a"), ev(fence.LockDelayed, "a")},
		{ev(fence.LockDelayed, "a"), ev(fence.FenceAdvanced, ""), ev(fence.FenceAdvanced, "")},
	} {
		if err := h.store.RecordHistory(t.Context(), batch, fence.HistoryCursor{}); err != nil {
			t.Fatal(err)
		}
	}
	es, err := fence.History(t.Context(), h.pool, "r", time.Time{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range es {
		got[e.Event]++
	}
	want := map[string]int{fence.Granted: 1, fence.Expired: 1, fence.LockDelayed: 1, fence.FenceAdvanced: 2}
	if len(got) != len(want) || got[fence.Granted] != 1 || got[fence.Expired] != 1 || got[fence.LockDelayed] != 1 || got[fence.FenceAdvanced] != 2 {
		t.Errorf("history %v, want %v: one of each event per lease, the first end only", got, want)
	}
}

// TestJanitorTrimsHistory: per resource, the newest MaxHistory events
// stay, and none older than HistoryKeptFor; another resource's are its
// own.
func TestJanitorTrimsHistory(t *testing.T) {
	h := newDB(t)
	_, err := h.pool.Exec(t.Context(), `
		INSERT INTO fencegw.lock_history (resource, event, lease_id, at)
		SELECT 'busy', 'granted', 'l' || i, now() - interval '1 hour' FROM generate_series(1, $1 + 20) AS i;
		`, fence.MaxHistory)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.pool.Exec(t.Context(), `INSERT INTO fencegw.lock_history (resource, event, lease_id, at) VALUES
		('quiet', 'granted', 'q1', now() - $1::interval - interval '1 hour'),
		('quiet', 'granted', 'q2', now())`, fence.HistoryKeptFor)
	if err != nil {
		t.Fatal(err)
	}
	h.store.Sweep(t.Context(), 24*time.Hour, slog.New(slog.DiscardHandler))
	count := func(resource string) (n int, oldest string) {
		if err := h.pool.QueryRow(t.Context(), `SELECT count(*), coalesce(min(lease_id COLLATE "C"), '') FROM fencegw.lock_history WHERE resource = $1`, resource).Scan(&n, &oldest); err != nil {
			t.Fatal(err)
		}
		return n, oldest
	}
	if n, _ := count("busy"); n != fence.MaxHistory {
		t.Errorf("busy resource keeps %d events, want %d", n, fence.MaxHistory)
	}
	var first int
	if err := h.pool.QueryRow(t.Context(), `SELECT count(*) FROM fencegw.lock_history WHERE resource = 'busy' AND lease_id IN ('l1', 'l20')`).Scan(&first); err != nil || first != 0 {
		t.Errorf("the oldest events of the busy resource: %d left (%v), want none", first, err)
	}
	if n, oldest := count("quiet"); n != 1 || oldest != "q2" {
		t.Errorf("quiet resource keeps %d events from %s, want only q2: q1 is past %s", n, oldest, fence.HistoryKeptFor)
	}
}

// TestHistoryCursor: the cursor moves with the events it covers, only
// forward for one etcd cluster, and to another cluster's revision when
// the identity changes; a zero cursor leaves it alone.
func TestHistoryCursor(t *testing.T) {
	h := newDB(t)
	read := func() fence.HistoryCursor {
		t.Helper()
		c, err := fence.ReadHistoryCursor(t.Context(), h.pool)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := read(); c != (fence.HistoryCursor{}) {
		t.Fatalf("a new database's cursor: %+v, want none", c)
	}
	end := []fence.HistoryEvent{{Resource: "r", Event: fence.Expired, LeaseID: "c1", Token: "1:5"}}
	for _, tc := range []struct {
		events []fence.HistoryEvent
		move   fence.HistoryCursor
		want   fence.HistoryCursor
	}{
		{end, fence.HistoryCursor{Identity: "x", Revision: 50}, fence.HistoryCursor{Identity: "x", Revision: 50}},
		{nil, fence.HistoryCursor{Identity: "x", Revision: 40}, fence.HistoryCursor{Identity: "x", Revision: 50}}, // a replica behind
		{end, fence.HistoryCursor{}, fence.HistoryCursor{Identity: "x", Revision: 50}},
		{nil, fence.HistoryCursor{Identity: "x", Revision: 70}, fence.HistoryCursor{Identity: "x", Revision: 70}},
		{nil, fence.HistoryCursor{Identity: "y", Revision: 9}, fence.HistoryCursor{Identity: "y", Revision: 9}}, // a rebuilt cluster
	} {
		if err := h.store.RecordHistory(t.Context(), tc.events, tc.move); err != nil {
			t.Fatal(err)
		}
		if c := read(); c != tc.want {
			t.Fatalf("after moving to %+v: %+v, want %+v", tc.move, c, tc.want)
		}
	}
	es, err := fence.History(t.Context(), h.pool, "r", time.Time{}, 100)
	if err != nil || len(es) != 1 {
		t.Fatalf("history: %v, %v; want the one end, recorded once", es, err)
	}
}
