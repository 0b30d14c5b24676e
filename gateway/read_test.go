package gateway_test

import (
	"net/http"
	"strings"
	"testing"
)

// readPolicy is the demo policy, whose balance reads one account, with a
// read of two.
func readPolicy(t *testing.T) string {
	return strings.Replace(demoPolicy(t, "monotonic"), "\noperations:\n", "\noperations:\n"+`  balances:
    access: read
    resources:
      from: "account/{from}"
      to: "account/{to}"
    args:
      from: {type: string, max_length: 64, pattern: "acct-[0-9]+"}
      to: {type: string, max_length: 64, pattern: "acct-[0-9]+"}
    statements:
      - sql: SELECT id, balance_cents FROM demo.accounts WHERE id IN (:from, :to) ORDER BY id
`, 1)
}

// TestFencedRead is the seed's §9.7 "read to decide": A holds 1:N and
// reads; B takes the lock and writes; A's next read is refused as stale,
// so A learns it was superseded before it decides, not when it writes.
// Reads answer the rows and the fence, are counted apart from writes, and
// never write.
func TestFencedRead(t *testing.T) {
	h := newHarness(t, readPolicy(t))
	a, b := h.succession("account/acct-46", 30)
	defer h.release(b)
	read := func(token string) response {
		return h.do(http.MethodPost, "/v1/reads/balance", http.Header{"Fencing-Token": {token}}, `{"account": "acct-46"}`)
	}
	r := read(a.Token)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"balance_cents":1000`) || !strings.Contains(string(r.Body), `"fence":null`) {
		t.Fatalf("A's read before any write: %d %s, want 200 with the rows and the fence null: none yet", r.Status, r.Body)
	}
	if w := h.write("debit", b.Token, debit("acct-46", 300)); w.Status != http.StatusOK {
		t.Fatalf("B's debit: %d %s", w.Status, w.Body)
	}
	before := h.state()
	r = read(a.Token)
	if r.Status != http.StatusConflict || r.Problem.Kind() != "stale-token" || r.Problem.CurrentToken != b.Plain || strings.Contains(string(r.Body), "balance_cents") {
		t.Fatalf("A's read after B wrote: %d %s, want 409 stale-token naming %s, no rows", r.Status, r.Body, b.Plain)
	}
	r = read(b.Token)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"balance_cents":700`) || !strings.Contains(string(r.Body), `"fence":"`+b.Plain+`"`) {
		t.Fatalf("B's read: %d %s, want 200 with the balance after its debit and the fence %s", r.Status, r.Body, b.Plain)
	}
	if after := h.state(); after != before {
		t.Fatalf("reads changed the database: %s -> %s", before, after)
	}
	if m := metricsText(t, h.base); !strings.Contains(m, `fencegw_reads_total{operation="balance",outcome="ok"} 2`) ||
		!strings.Contains(m, `fencegw_reads_total{operation="balance",outcome="stale-token"} 1`) ||
		strings.Contains(m, `fencegw_writes_total{operation="balance"`) {
		t.Errorf("reads are not counted apart from writes:\n%s", m)
	}
}

// TestReadsAndWritesKeepToTheirEndpoints: a read sent as a write, or a
// write as a read, is an unknown operation there, named with its endpoint.
func TestReadsAndWritesKeepToTheirEndpoints(t *testing.T) {
	h := newHarness(t, readPolicy(t))
	l := h.mustAcquire("account/acct-47", 30, 0)
	defer h.release(l)
	before := h.state()
	hdr := http.Header{"Fencing-Token": {l.Token}}
	if r := h.do(http.MethodPost, "/v1/ops/balance", hdr, `{"account": "acct-47"}`); r.Status != http.StatusNotFound || !strings.Contains(r.Problem.Detail, "POST /v1/reads/balance") {
		t.Errorf("a read sent as a write: %d %s, want 404 naming /v1/reads/balance", r.Status, r.Body)
	}
	if r := h.do(http.MethodPost, "/v1/reads/debit", hdr, debit("acct-47", 5)); r.Status != http.StatusNotFound || !strings.Contains(r.Problem.Detail, "POST /v1/ops/debit") {
		t.Errorf("a write sent as a read: %d %s, want 404 naming /v1/ops/debit", r.Status, r.Body)
	}
	if r := h.do(http.MethodPost, "/v1/reads/balance", nil, `{"account": "acct-47"}`); r.Status != http.StatusPreconditionRequired {
		t.Errorf("a read without a token: %d %s, want 428", r.Status, r.Body)
	}
	if after := h.state(); after != before {
		t.Fatalf("refused calls changed the database: %s -> %s", before, after)
	}
}

// TestFencedReadOfSeveralResources: each role's token is held to its own
// resource's fence, and the answer names each fence.
func TestFencedReadOfSeveralResources(t *testing.T) {
	h := newHarness(t, readPolicy(t))
	from := h.mustAcquire("account/acct-48", 30, 0)
	oldTo, to := h.succession("account/acct-49", 30)
	defer h.release(from)
	defer h.release(to)
	if w := h.write("credit", to.Token, debit("acct-49", 1)); w.Status != http.StatusOK {
		t.Fatalf("credit: %d %s", w.Status, w.Body)
	}
	read := func(toToken string) response {
		return h.do(http.MethodPost, "/v1/reads/balances", http.Header{"Fencing-Token": {`from="` + from.Token + `", to="` + toToken + `"`}}, `{"from": "acct-48", "to": "acct-49"}`)
	}
	if r := read(to.Token); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"role":"to","resource":"account/acct-49","token":"`+to.Plain+`","fence":"`+to.Plain+`"`) ||
		!strings.Contains(string(r.Body), `"role":"from","resource":"account/acct-48","token":"`+from.Plain+`","fence":null`) || !strings.Contains(string(r.Body), `{"operation":"balances","fences":[`) {
		t.Fatalf("read with both tokens current (from never written: its fence null, and no fence beside fences): %d %s", r.Status, r.Body)
	}
	if r := read(oldTo.Token); r.Status != http.StatusConflict || r.Problem.Role != "to" || r.Problem.CurrentToken != to.Plain {
		t.Fatalf("read with to's token stale: %d %s, want 409 naming role to", r.Status, r.Body)
	}
}
