package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/devserver/pgcluster"
	"github.com/fencegw/fencegw/schema"
)

// replicated is a gateway on a primary with a synchronous standby, behind
// one multi-host URL, for the tests of what a failover keeps.
type replicated struct {
	*harness
	primary, standby *pgcluster.Cluster
	admin            *pgx.Conn // the primary's superuser
}

// newReplicated starts the pair, migrates it and serves policyYAML on it
// with auth.
func newReplicated(t *testing.T, ctx context.Context, policyYAML string, auth *authority.Etcd) *replicated {
	t.Helper()
	primary, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = primary.Stop() })
	standby, err := primary.StartStandby(ctx, pgcluster.StandbyOptions{Name: "sync1", Synchronous: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = standby.Stop() })
	both := pgcluster.MultiHostURL("postgres", primary, standby)
	if err := schema.Up(both, schema.Gateway(), schema.Dir("../testdata/demo/migrations", "demo_schema_migrations")); err != nil {
		t.Fatal(err)
	}
	pool, err := fence.NewPool(ctx, both)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	admin, err := pgx.Connect(ctx, primary.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	h := &harness{t: t, pool: pool, auth: auth, policy: policyYAML}
	h.gw, h.node, h.base = gatewayWithPool(t, pool, h.auth, h.policy)
	return &replicated{harness: h, primary: primary, standby: standby, admin: admin}
}

// sendCancellingSyncRep sends a request and cancels the first wait for
// the synchronous standby that answering it meets; it returns the answer.
func (rp *replicated) sendCancellingSyncRep(ctx context.Context, what, path string, header http.Header, body string) response {
	rp.t.Helper()
	answered := make(chan response, 1)
	go func() { answered <- rp.do(http.MethodPost, path, header, body) }()
	for {
		select {
		case r := <-answered:
			return r // answered without waiting for the standby
		case <-time.After(10 * time.Millisecond):
		}
		var pid int
		if rp.admin.QueryRow(ctx, "SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep' LIMIT 1").Scan(&pid) == nil {
			if _, err := rp.admin.Exec(ctx, "SELECT pg_cancel_backend($1)", pid); err != nil {
				rp.t.Fatal(err)
			}
			return <-answered
		}
		if ctx.Err() != nil {
			rp.t.Fatalf("%s: no answer and no wait for the standby", what)
		}
	}
}
