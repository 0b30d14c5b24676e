package fence_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/fencegw/fencegw/fence"
)

// TestAuditFloodPushesOutOnlyItsOwn: one client floods the audit with
// forged tokens over 200 resources, far past what the table keeps. The
// janitor then trims only that client's rows: another client's evidence
// of the same kind, the anonymous class's, and the flooder's own first
// refusals of the hour survive; its refusals of last week's hours are
// trimmed with the rest. (Trimmed per reason alone, the flood pushed
// everyone's evidence out.)
func TestAuditFloodPushesOutOnlyItsOwn(t *testing.T) {
	h := newDB(t)
	ctx := t.Context()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := h.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	insert := `INSERT INTO fencegw.rejections (at, resource, operation, reason, presented, client, request_id, remote_addr)
		SELECT now() - $1::interval, 'account/acct-' || (i % 200), 'debit', 'token-rejected', '1:' || i, $2, $3 || i, '203.0.113.9'
		  FROM generate_series(1, $4) AS i`
	exec(insert, 8*24*time.Hour, "mallory", "last-week-", 20)
	exec(insert, time.Hour, "mallory", "first-", 5)
	err := h.store.RecordRejections(ctx, []fence.Rejection{
		{Resource: "account/acct-7", Operation: "debit", Reason: "token-rejected", Presented: "1:7", Client: "billing", RequestID: "billing-evidence", RemoteAddr: "10.1.1.1"},
		{Resource: "account/acct-8", Operation: "debit", Reason: "token-rejected", Presented: "1:8", Client: "anonymous", RequestID: "anonymous-evidence", RemoteAddr: "10.1.1.2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	exec(insert, time.Duration(0), "mallory", "flood-", 12000)

	h.store.Sweep(ctx, 24*time.Hour, slog.New(slog.DiscardHandler))

	count := func(where string) (n int) {
		t.Helper()
		if err := h.pool.QueryRow(ctx, "SELECT count(*) FROM fencegw.rejections WHERE "+where).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tt := range []struct {
		what, where string
		want        int
	}{
		{"another client's evidence", "request_id = 'billing-evidence'", 1},
		{"the anonymous class's evidence", "request_id = 'anonymous-evidence'", 1},
		{"the flooder's first refusals of the hour", "request_id LIKE 'first-%'", 5},
		{"the flooder's refusals of last week", "request_id LIKE 'last-week-%'", 0},
		{"the flood's first of its hour and its newest", "request_id LIKE 'flood-%'", fence.FirstRejectionsKept + fence.MaxRejections},
		{"the flood's newest", fmt.Sprintf("request_id = 'flood-%d'", 12000), 1},
	} {
		if got := count(tt.where); got != tt.want {
			t.Errorf("%s: %d rows, want %d", tt.what, got, tt.want)
		}
	}
}

// TestAuditKeepsRecentClients: the table is bounded whatever names clients
// ever had: per reason, only the MaxAuditClients clients refused most
// recently keep rows.
func TestAuditKeepsRecentClients(t *testing.T) {
	h := newDB(t)
	ctx := t.Context()
	const clients = fence.MaxAuditClients + 44
	if _, err := h.pool.Exec(ctx, `INSERT INTO fencegw.rejections (resource, operation, reason, client)
		SELECT 'account/acct-1', 'debit', reason, 'client_' || i FROM generate_series(1, $1) AS i, unnest(ARRAY['stale-token', 'token-rejected']) AS reason
		 ORDER BY i`, clients); err != nil {
		t.Fatal(err)
	}
	h.store.Sweep(ctx, 24*time.Hour, slog.New(slog.DiscardHandler))
	var kept, oldest int
	err := h.pool.QueryRow(ctx, `SELECT count(DISTINCT client), min(substr(client, 8)::int) FROM fencegw.rejections WHERE reason = 'stale-token'`).Scan(&kept, &oldest)
	if err != nil || kept != fence.MaxAuditClients || oldest != clients-fence.MaxAuditClients+1 {
		t.Fatalf("after the janitor: %d clients, the oldest client_%d, %v; want the newest %d", kept, oldest, err, fence.MaxAuditClients)
	}
}
