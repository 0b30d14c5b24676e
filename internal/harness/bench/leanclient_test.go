package bench

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestLeanClient: writes reuse one connection, refusals included (their
// body is drained); a refusal is reported by status and problem type; what
// the server received is the request the gateway expects.
func TestLeanClient(t *testing.T) {
	var conns, calls atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/ops/add" || r.Header.Get("Fencing-Token") != "1:7" || string(body) != `{"id":42,"amount":1}` {
			t.Errorf("got %s %s token %q body %s", r.Method, r.URL.Path, r.Header.Get("Fencing-Token"), body)
		}
		if calls.Add(1) == 3 {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"type":"urn:fencegw:problem:stale-token","detail":"older"}`)
			return
		}
		_, _ = io.WriteString(w, `{"operation":"add"}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	c := newLeanClient(strings.TrimPrefix(srv.URL, "http://"), "add", sameToken("1:7"), 1)
	defer c.close()
	for i, want := range []string{"", "", "409 stale-token", ""} {
		if kind, detail := c.write(context.Background(), 42); kind != want {
			t.Fatalf("write %d: %q (%s), want %q", i, kind, detail, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}

	srv.CloseClientConnections()
	c.close()
	bad := newLeanClient("127.0.0.1:1", "add", sameToken("1:7"), 1)
	if kind, _ := bad.write(context.Background(), 1); kind != "transport" {
		t.Errorf("write to a closed port: %q, want transport", kind)
	}
}
