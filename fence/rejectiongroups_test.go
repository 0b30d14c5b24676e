package fence_test

import (
	"testing"

	"github.com/fencegw/fencegw/fence"
)

// TestRejectionGroupsKeepEveryResourceInView: a hot resource refused
// twenty-five times after one refusal of another pushes that one out of
// the newest twenty rows, but not out of the groups: each resource and
// reason is one row, newest first, with its count (the rows' suppressed
// refusals included) and its first time.
func TestRejectionGroupsKeepEveryResourceInView(t *testing.T) {
	h := newDB(t)
	ctx := t.Context()
	if _, err := h.pool.Exec(ctx, `INSERT INTO fencegw.rejections (at, resource, operation, reason, presented, current, client)
		VALUES (now() - interval '1 minute', 'account/quiet', 'debit', 'stale-token', '1:4', '1:5', 'billing')`); err != nil {
		t.Fatal(err)
	}
	if _, err := h.pool.Exec(ctx, `INSERT INTO fencegw.rejections (at, resource, operation, reason, presented, current, client, suppressed)
		SELECT now() - make_interval(secs => 30 - i), 'account/hot', 'debit', 'stale-token', '1:' || i, '1:99', 'worker', CASE WHEN i = 25 THEN 3 ELSE 0 END
		FROM generate_series(1, 25) AS i`); err != nil {
		t.Fatal(err)
	}
	rows, err := fence.Rejections(ctx, h.pool, "", 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Resource == "account/quiet" {
			t.Fatalf("the newest 20 rows hold the quiet resource's refusal; the test needs a flood that hides it")
		}
	}

	groups, err := fence.RejectionGroups(ctx, h.pool, "", 20, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 {
		t.Fatalf("groups %+v, want the hot and the quiet resource", groups)
	}
	hot, quiet := groups[0], groups[1]
	if hot.Resource != "account/hot" || hot.Count != 25+3 || hot.Presented != "1:25" || hot.Client != "worker" || !hot.FirstAt.Before(hot.At) {
		t.Errorf("hot group %+v, want account/hot first, 28 refusals (3 suppressed), the newest presented 1:25", hot)
	}
	if quiet.Resource != "account/quiet" || quiet.Count != 1 || quiet.Presented != "1:4" || quiet.Client != "billing" || !quiet.FirstAt.Equal(quiet.At) {
		t.Errorf("quiet group %+v, want account/quiet with its one refusal", quiet)
	}

	// The prefix and the limit bound the groups as they bound the rows.
	if g, err := fence.RejectionGroups(ctx, h.pool, "account/q", 20, 1000); err != nil || len(g) != 1 || g[0].Resource != "account/quiet" {
		t.Errorf("groups under account/q: %+v, %v", g, err)
	}
	if g, err := fence.RejectionGroups(ctx, h.pool, "", 1, 1000); err != nil || len(g) != 1 || g[0].Resource != "account/hot" {
		t.Errorf("one group: %+v, %v; want the newest", g, err)
	}
}
