package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/testgw"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/schema"
)

// benchGateway is a migrated database and a gateway on the demo policy.
func benchGateway(b *testing.B) (http.Handler, *authority.Etcd) {
	b.Helper()
	dbURL := testenv.NewDatabase(b)
	if err := schema.Up(dbURL, schema.Gateway(), schema.Dir("../testdata/demo/migrations", "demo_schema_migrations")); err != nil {
		b.Fatal(err)
	}
	pol, err := policy.Load("../testdata/demo/policy.yaml")
	if err != nil {
		b.Fatal(err)
	}
	pool, err := fence.NewPool(context.Background(), dbURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	auth := authority.NewEtcd(testenv.EtcdClient(b), testenv.KEK())
	version, _ := schema.Latest(schema.Gateway())
	cfg := gateway.Config{Pool: pool, Authority: auth, Policy: pol, SchemaVersion: version,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	testgw.NewNode(b, &cfg)
	gw, err := gateway.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	gw.SetReady(true)
	return gw.Handler(), auth
}

// BenchmarkAcceptedWrite runs an accepted debit through the whole handler
// (routing, token, arguments, etcd check from cache, the pipelined
// PostgreSQL round trip, response) without the network in between: its
// allocs/op are the gateway's allocations per accepted write, pgx included.
func BenchmarkAcceptedWrite(b *testing.B) {
	h, auth := benchGateway(b)
	lease, err := auth.Acquire(b.Context(), "account/acct-99", authority.AcquireOptions{TTL: authority.MaxTTL})
	if err != nil {
		b.Fatal(err)
	}
	defer auth.Release(context.Background(), lease.ID, "")
	body := `{"account": "acct-99", "amount_cents": 1}`
	send := func() {
		r := httptest.NewRequest(http.MethodPost, "/v1/ops/credit", strings.NewReader(body))
		r.Header.Set(gateway.TokenHeader, lease.Token.String())
		w := deadlineRecorder{httptest.NewRecorder()}
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	send() // warm the statement cache
	b.ReportAllocs()
	for b.Loop() {
		send()
	}
}

// deadlineRecorder takes read deadlines, as a server's connection does:
// httptest's recorder refuses them, with an error of four allocations per
// request that a real connection never makes.
type deadlineRecorder struct{ *httptest.ResponseRecorder }

func (deadlineRecorder) SetReadDeadline(time.Time) error { return nil }
