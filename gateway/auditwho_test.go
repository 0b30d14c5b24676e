package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// rejectionWho reads the client, request id and remote address of the
// rejection the request with id left, waiting for the audit to write it.
func rejectionWho(t *testing.T, h *harness, id string) (client, remote string) {
	t.Helper()
	if !testenv.WaitFor(30*time.Second, func() bool {
		err := h.pool.QueryRow(context.Background(), "SELECT client, remote_addr FROM fencegw.rejections WHERE request_id = $1", id).Scan(&client, &remote)
		return err == nil
	}) {
		t.Fatalf("no rejection row for request %s", id)
	}
	return client, remote
}

// TestAuditNamesWho: a refused write's rejection row and every access log
// line name the client (or anonymous), the request id and the remote
// address. X-Forwarded-For and Forwarded are believed only from a trusted
// proxy: from any other peer they are ignored and the peer's own address
// recorded, so a client cannot put another's address in the evidence.
func TestAuditNamesWho(t *testing.T) {
	h := newHarness(t, billingPolicy(t, "[debit, credit]"))
	lines := make(lineWriter, 1024)
	logTo := func(c *gateway.Config) { c.Logger = slog.New(slog.NewJSONHandler(lines, nil)) }
	direct := h.sibling(logTo)
	behindProxy := h.sibling(logTo, func(c *gateway.Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")}
	})
	billing := func(token string) http.Header {
		return http.Header{"Authorization": {"Bearer billing-secret"}, gateway.TokenHeader: {token}}
	}
	lease := func() (id, token string) {
		r := h.do(http.MethodPost, "/v1/leases", billing(""), `{"resource": "account/acct-41", "ttl": 60}`)
		var l struct {
			LeaseID string `json:"lease_id"`
			Token   string `json:"token"`
		}
		if r.Status != http.StatusCreated {
			t.Fatalf("lease as billing: %d %s", r.Status, r.Body)
		}
		decodeJSON(t, r.Body, &l)
		return l.LeaseID, l.Token
	}
	oldID, old := lease()
	h.do(http.MethodDelete, "/v1/leases/"+oldID, billing(""), "")
	curID, cur := lease()
	defer h.do(http.MethodDelete, "/v1/leases/"+curID, billing(""), "")
	if r := h.do(http.MethodPost, "/v1/ops/credit", billing(cur), debit("acct-41", 1)); r.Status != http.StatusOK {
		t.Fatalf("credit with the current token: %d %s", r.Status, r.Body)
	}
	state := h.state()

	tests := []struct {
		name    string
		gw      *harness
		bearer  string
		headers map[string]string
		client  string
		remote  string
	}{
		{"a forged X-Forwarded-For, from a peer not trusted", direct, "billing-secret", map[string]string{"X-Forwarded-For": "203.0.113.9"}, "billing", "127.0.0.1"},
		{"a forged Forwarded, from a peer not trusted", direct, "billing-secret", map[string]string{"Forwarded": "for=203.0.113.9"}, "billing", "127.0.0.1"},
		{"through trusted proxies", behindProxy, "billing-secret", map[string]string{"X-Forwarded-For": "203.0.113.9, 10.1.2.3"}, "billing", "203.0.113.9"},
		{"a forged hop before the first trusted one", behindProxy, "billing-secret", map[string]string{"X-Forwarded-For": "198.51.100.1, 203.0.113.9, 10.1.2.3"}, "billing", "203.0.113.9"},
		{"Forwarded from a trusted proxy", behindProxy, "billing-secret", map[string]string{"Forwarded": `for="[2001:db8::7]:4711";proto=https, for=10.0.0.2`}, "billing", "2001:db8::7"},
		{"no headers", behindProxy, "billing-secret", nil, "billing", "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := http.Header{"Authorization": {"Bearer " + tt.bearer}, gateway.TokenHeader: {old}}
			for k, v := range tt.headers {
				hdr.Set(k, v)
			}
			r := tt.gw.do(http.MethodPost, "/v1/ops/credit", hdr, debit("acct-41", 1))
			if r.Status != http.StatusConflict || r.Problem.Kind() != "stale-token" {
				t.Fatalf("a write with the older token: %d %s, want 409 stale-token", r.Status, r.Body)
			}
			id := r.Header.Get(gateway.RequestIDHeader)
			if client, remote := rejectionWho(t, h, id); client != tt.client || remote != tt.remote {
				t.Errorf("rejection row: client %q, remote %q; want %q, %q", client, remote, tt.client, tt.remote)
			}
			if m := accessLine(t, lines, id); m["client"] != tt.client || m["remote_addr"] != tt.remote {
				t.Errorf("access log line: client %v, remote_addr %v; want %q, %q", m["client"], m["remote_addr"], tt.client, tt.remote)
			}
		})
	}
	if h.state() != state {
		t.Fatal("a refused write changed the database")
	}

	// Without a client: anonymous, in the access log (a 401 is no fence
	// refusal, so not in the audit).
	r := direct.do(http.MethodPost, "/v1/ops/credit", http.Header{"X-Forwarded-For": {"203.0.113.9"}}, debit("acct-41", 1))
	if r.Status != http.StatusUnauthorized {
		t.Fatalf("no bearer: %d %s", r.Status, r.Body)
	}
	if m := accessLine(t, lines, r.Header.Get(gateway.RequestIDHeader)); m["client"] != "anonymous" || m["remote_addr"] != "127.0.0.1" {
		t.Errorf("access log line of an unauthenticated call: client %v, remote_addr %v; want anonymous, 127.0.0.1", m["client"], m["remote_addr"])
	}
}
