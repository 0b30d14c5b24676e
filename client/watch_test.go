package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/testgw"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/schema"
)

// restartableGateway is a gateway served at one address that can be shut
// down as fencegw serve shuts down, and started again there.
type restartableGateway struct {
	t    *testing.T
	addr string
	pool *pgxpool.Pool
	auth *authority.Etcd
	stop func()
}

func newRestartableGateway(t *testing.T) *restartableGateway {
	t.Helper()
	dbURL := testenv.NewDatabase(t)
	if err := schema.Up(dbURL, schema.Gateway(), schema.Dir("../testdata/demo/migrations", "demo_schema_migrations")); err != nil {
		t.Fatal(err)
	}
	pool, err := fence.NewPool(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	g := &restartableGateway{t: t, addr: "127.0.0.1:0", pool: pool, auth: authority.NewEtcd(testenv.EtcdClient(t), testenv.KEK())}
	g.start()
	t.Cleanup(func() {
		if g.stop != nil {
			g.stop()
		}
	})
	return g
}

func (g *restartableGateway) start() {
	g.t.Helper()
	pol, err := policy.Parse("policy.yaml", []byte(demoPolicy(g.t)))
	if err != nil {
		g.t.Fatal(err)
	}
	version, err := schema.Latest(schema.Gateway())
	if err != nil {
		g.t.Fatal(err)
	}
	cfg := gateway.Config{
		Pool: g.pool, Authority: g.auth, Policy: pol, SchemaVersion: version,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	testgw.NewNode(g.t, &cfg)
	gw, err := gateway.New(cfg)
	if err != nil {
		g.t.Fatal(err)
	}
	gw.SetReady(true)
	ln, err := net.Listen("tcp", g.addr)
	if err != nil {
		g.t.Fatal(err)
	}
	g.addr = ln.Addr().String()
	srv := &http.Server{Handler: gw.Handler()}
	go func() { _ = srv.Serve(ln) }()
	g.stop = func() {
		// As fencegw serve stops: waits and watches end, then the drain.
		gw.StopLeaseWaits()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			g.t.Errorf("shutdown: %v", err)
		}
		g.stop = nil
	}
}

// describeEvent is a watch event as the tests compare it.
func describeEvent(ev client.WatchEvent) string {
	s := fmt.Sprintf("%s #%d", ev.Type, ev.Transitions)
	if ev.Holder != nil {
		s += fmt.Sprintf(" %s=%q", ev.Holder.Token, ev.Holder.Value)
	}
	return s
}

// TestWatchMissesNothingAcrossAGatewayRestart: a watch whose gateway
// shuts down resumes, when a gateway serves again at its address, with
// Last-Event-ID: every grant, value change and release made meanwhile
// arrives once, in order, and the state is not sent again.
func TestWatchMissesNothingAcrossAGatewayRestart(t *testing.T) {
	g := newRestartableGateway(t)
	const res = "account/acct-8071"
	c := client.New("http://" + g.addr)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events, err := c.Watch(ctx, res)
	if err != nil {
		t.Fatal(err)
	}
	take := func() client.WatchEvent {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the watch ended")
			}
			return ev
		case <-time.After(60 * time.Second):
			t.Fatal("no event within 60 s")
		}
		return client.WatchEvent{}
	}
	if ev := take(); ev.Type != "state" {
		t.Fatalf("first event %s, want the state", describeEvent(ev))
	}
	if ev := take(); ev.Type != "synced" {
		t.Fatalf("second event %s, want synced", describeEvent(ev))
	}
	base, err := g.auth.Observe(t.Context(), res) // the package's etcd may have counted grants before
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	churn := func(n int) {
		t.Helper()
		for range n {
			l, err := g.auth.Acquire(t.Context(), res, authority.AcquireOptions{TTL: 10 * time.Second, Value: "v"})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.auth.SetValue(t.Context(), l.ID, "", "w"); err != nil {
				t.Fatal(err)
			}
			if err := g.auth.Release(t.Context(), l.ID, ""); err != nil {
				t.Fatal(err)
			}
			n := base.Transitions + int64(len(want)/3) + 1
			tok := l.Token.Unsigned().String()
			want = append(want, fmt.Sprintf("granted #%d %s=%q", n, tok, "v"), fmt.Sprintf("value #%d %s=%q", n, tok, "w"),
				fmt.Sprintf("released #%d %s=%q", n, tok, "w"))
		}
	}
	var got []string
	collect := func() {
		t.Helper()
		for len(got) < len(want) {
			got = append(got, describeEvent(take()))
			if i := len(got) - 1; got[i] != want[i] {
				t.Fatalf("event %d: got %s, want %s\ngot:  %q\nwant: %q", i, got[i], want[i], got, want)
			}
		}
	}
	churn(2)
	collect()
	g.stop()
	churn(3) // while no gateway serves
	g.start()
	churn(2)
	collect()
	select {
	case ev := <-events:
		t.Fatalf("an event more: %s", describeEvent(ev))
	default:
	}
}

// TestWatchRefusedOutsideTheClientsScope: the first request's refusal is
// Watch's error, and nothing is watched.
func TestWatchRefusedOutsideTheClientsScope(t *testing.T) {
	base := newGateway(t, demoPolicy(t))
	c := client.New(base)
	_, err := c.Watch(t.Context(), "ledger/1")
	var p *client.ProblemError
	if !errors.As(err, &p) || p.Status != http.StatusBadRequest {
		t.Fatalf("watch of no lock's name: %v, want a 400 problem", err)
	}
}

// TestLeaseSetValueIsWatched: a holder's new value reaches a watcher, and
// a released lease sets none.
func TestLeaseSetValueIsWatched(t *testing.T) {
	base := newGateway(t, demoPolicy(t))
	c := client.New(base)
	const res = "account/acct-8072"
	events, err := c.Watch(t.Context(), res)
	if err != nil {
		t.Fatal(err)
	}
	next := func() client.WatchEvent { t.Helper(); return nextEvent(t, events) }
	for next().Type != "synced" {
	}
	l, err := c.Acquire(t.Context(), res, client.AcquireOptions{TTL: 10 * time.Second, Value: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(); ev.Type != "granted" || ev.Holder.Value != "a" {
		t.Fatalf("got %s, want granted with a", describeEvent(ev))
	}
	if err := l.SetValue(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	if ev := next(); ev.Type != "value" || ev.Holder.Value != "b" || ev.Holder.Token != client.Unsigned(l.Token()) {
		t.Fatalf("got %s, want value b of %s", describeEvent(ev), l.Token())
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ev := next(); ev.Type != "released" {
		t.Fatalf("got %s, want released", describeEvent(ev))
	}
	if err := l.SetValue(t.Context(), "c"); !errors.Is(err, client.ErrReleased) && !errors.Is(err, client.ErrLeaseLost) {
		t.Fatalf("SetValue after the release: %v, want the lease gone", err)
	}
}

// nextEvent is the watch's next event, failing t if none comes within
// 30 s.
func nextEvent(t *testing.T, events <-chan client.WatchEvent) client.WatchEvent {
	t.Helper()
	select {
	case ev := <-events:
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event within 30 s")
	}
	return client.WatchEvent{}
}

// TestWatchEndsOnAStreamThatIsNotTheGateways: an event that is none (a
// proxy's answer, a broken stream), or a line longer than any event of
// the gateway's, ends the watch with an error event
// naming it, where the watch reconnected and met it again without end;
// a stream that merely breaks is resumed (TestWatchMissesNothingAcrossAGatewayRestart).
func TestWatchEndsOnAStreamThatIsNotTheGateways(t *testing.T) {
	for _, tc := range []struct{ name, stream string }{
		{"an event that is none", "event: granted\ndata: <html>not an event</html>\n\n"},
		{"a line longer than any event", "event: granted\ndata: " + strings.Repeat("x", 128<<10) + "\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opened := make(chan struct{}, 100)
			srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				opened <- struct{}{}
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				fmt.Fprint(w, tc.stream)
			}))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			events, err := client.New(srv).Watch(ctx, "account/acct-1")
			if err != nil {
				t.Fatal(err)
			}
			ev, ok := <-events
			if !ok || ev.Type != "error" || !errors.Is(ev.Err, client.ErrUnexpectedResponse) {
				t.Fatalf("first event %+v (open %v), want an error event: %v", ev, ok, ev.Err)
			}
			if _, ok := <-events; ok {
				t.Fatal("the watch went on after a stream that is not the gateway's")
			}
			if n := len(opened); n != 1 {
				t.Fatalf("the stream was opened %d times, want once", n)
			}
		})
	}
}

// newTestServer serves h on loopback until the test ends and returns its
// base URL.
func newTestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}
