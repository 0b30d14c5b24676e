package bench

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// connEvents serves h and reports its connections' state changes.
func connEvents(t *testing.T, h http.Handler) (addr string, states <-chan http.ConnState) {
	t.Helper()
	ch := make(chan http.ConnState, 1024)
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) { ch <- s }
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), ch
}

// await waits for n events of state s on states, whatever comes between.
func await(t *testing.T, states <-chan http.ConnState, s http.ConnState, n int) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for seen := 0; seen < n; {
		select {
		case got := <-states:
			if got == s {
				seen++
			}
		case <-timeout:
			t.Fatalf("saw %d connections %v, want %d", seen, s, n)
		}
	}
}

// TestIdleConnectionsStayOpenUntilClosed: openIdle leaves n connections
// idle at the server, each after one answered request, and close closes
// every one of them.
func TestIdleConnectionsStayOpenUntilClosed(t *testing.T) {
	const n = 40
	addr, states := connEvents(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/livez" {
			http.NotFound(w, r)
		}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ic, err := openIdle(ctx, []string{addr}, n)
	if err != nil {
		t.Fatal(err)
	}
	await(t, states, http.StateIdle, n)
	ic.close()
	await(t, states, http.StateClosed, n)
}

// TestIdleConnectionsRefusedCloseThemAll: a gateway at its
// --max-connections answers 503 and closes; openIdle says so and leaves
// none of the connections it opened behind.
func TestIdleConnectionsRefusedCloseThemAll(t *testing.T) {
	const allowed = 5
	served := make(chan struct{}, 100)
	addr, states := connEvents(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case served <- struct{}{}:
		default:
		}
		if len(served) > allowed {
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := openIdle(ctx, []string{addr}, 20)
	if err == nil || !strings.Contains(err.Error(), "--max-connections") {
		t.Fatalf("openIdle past the limit = %v, want an error naming --max-connections", err)
	}
	opened := 0
	timeout := time.After(30 * time.Second)
	for closed := 0; opened == 0 || closed < opened; {
		select {
		case s := <-states:
			switch s {
			case http.StateNew:
				opened++
			case http.StateClosed, http.StateHijacked:
				closed++
			}
		case <-timeout:
			t.Fatalf("%d connections opened, %d closed, want all closed", opened, closed)
		}
	}
}
