package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
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

// BenchmarkHonestWritesUnderAForgeryFlood reports an honest client's write
// latency alone and while another client floods forged tokens from 64
// connections (as TestAForgeryFloodDoesNotStarveAnotherClient), at a gate
// of four turns: p50 and p99 of each, in milliseconds, and the flooded
// p99 over the unloaded one.
//
//	go test ./gateway -run '^$' -bench HonestWritesUnderAForgeryFlood -benchtime 200x
func BenchmarkHonestWritesUnderAForgeryFlood(b *testing.B) {
	base := benchFloodGateway(b)
	hc := &http.Client{Timeout: time.Minute}
	call := func(method, path, bearer, token, body string) (int, []byte) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+bearer)
		if token != "" {
			req.Header.Set(gateway.TokenHeader, token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}
	lease := func(bearer, resource string) string {
		status, body := call(http.MethodPost, "/v1/leases", bearer, "", `{"resource": "`+resource+`", "ttl": 600}`)
		var l struct {
			ID    string `json:"lease_id"`
			Token string `json:"token"`
		}
		if status != http.StatusCreated || json.Unmarshal(body, &l) != nil {
			b.Fatalf("lease %s: %d %s", resource, status, body)
		}
		// The benchmark runs again with a larger N: the lock must be free.
		b.Cleanup(func() { call(http.MethodDelete, "/v1/leases/"+l.ID, bearer, "", "") })
		return l.Token
	}
	mine, own := lease("honest-secret", "account/acct-92"), lease("flooder-secret", "account/acct-93")
	run := func() []float64 {
		lat := make([]float64, 0, b.N)
		for range b.N {
			start := time.Now()
			if status, body := call(http.MethodPost, "/v1/ops/credit", "honest-secret", mine, debit("acct-92", 1)); status != http.StatusOK {
				b.Fatalf("honest write: %d %s", status, body)
			}
			lat = append(lat, float64(time.Since(start).Microseconds())/1000)
		}
		slices.Sort(lat)
		return lat
	}
	pct := func(lat []float64, p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }

	b.ResetTimer()
	alone := run()
	stop := make(chan struct{})
	var sent atomic.Int64
	wait := forgedFlood(base, forge(own), 64, stop, &sent)
	if !testenv.WaitFor(time.Minute, func() bool { return sent.Load() >= 64 }) {
		b.Fatal("the flood never got going")
	}
	flooded := run()
	close(stop)
	wait()
	b.StopTimer()
	b.ReportMetric(pct(alone, 0.5), "alone-p50-ms")
	b.ReportMetric(pct(alone, 0.99), "alone-p99-ms")
	b.ReportMetric(pct(flooded, 0.5), "flooded-p50-ms")
	b.ReportMetric(pct(flooded, 0.99), "flooded-p99-ms")
	b.ReportMetric(pct(flooded, 0.99)/pct(alone, 0.99), "p99-ratio")
}

// benchFloodGateway serves floodPolicy on a fresh database, at a gate of
// four turns, for a benchmark; it returns its base URL.
func benchFloodGateway(b *testing.B) string {
	b.Helper()
	dbURL := testenv.NewDatabase(b)
	if err := schema.Up(dbURL, schema.Gateway(), schema.Dir("../testdata/demo/migrations", "demo_schema_migrations")); err != nil {
		b.Fatal(err)
	}
	pol, err := policy.Parse("flood.yaml", []byte(floodPolicy(b)))
	if err != nil {
		b.Fatal(err)
	}
	pool, err := fence.NewPool(context.Background(), dbURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	version, _ := schema.Latest(schema.Gateway())
	cfg := gateway.Config{
		Pool: pool, Authority: authority.NewEtcd(testenv.EtcdClient(b), testenv.KEK()), Policy: pol, SchemaVersion: version,
		MaxInFlight: 4, QueueTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	nd := testgw.NewNode(b, &cfg)
	gw, err := gateway.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	gw.SetReady(true)
	testgw.Run(b, nd.RunAudit)
	srv := httptest.NewServer(gw.Handler())
	b.Cleanup(srv.Close)
	return srv.URL
}
