package gateway_test

import (
	"fmt"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRejectionsWriteNothing sends every kind of bad write and checks the
// documented problem comes back and that neither the business tables nor
// any fence changed.
func TestRejectionsWriteNothing(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const account, resource = "acct-41", "account/acct-41"
	a := h.mustAcquire(resource, 5, 0)
	h.release(a)
	b := h.mustAcquire(resource, 5, 0)
	defer h.release(b)
	if r := h.write("debit", b.Token, debit(account, 100)); r.Status != http.StatusOK {
		t.Fatalf("setup write: %d %s", r.Status, r.Body)
	}
	unknown := h.mustAcquire("account/acct-4100", 5, 0)
	defer h.release(unknown)

	tests := []struct {
		name    string
		op      string
		headers http.Header
		body    string
		status  int
		kind    string
	}{
		{"stale token", "debit", tok(a.Token), debit(account, 1), http.StatusConflict, "stale-token"},
		{"missing token", "debit", nil, debit(account, 1), http.StatusPreconditionRequired, "token-required"},
		{"malformed token", "debit", tok("forty-two"), debit(account, 1), http.StatusBadRequest, "bad-request"},
		{"token with leading zero", "debit", tok("1:0" + b.Token[2:]), debit(account, 1), http.StatusBadRequest, "bad-request"},
		{"two token headers", "debit", http.Header{"Fencing-Token": {b.Token, b.Token}}, debit(account, 1), http.StatusBadRequest, "bad-request"},
		{"token from the future", "debit", tok("1:999999999"), debit(account, 1), http.StatusForbidden, "token-rejected"},
		{"token of another epoch", "debit", tok("2:1"), debit(account, 1), http.StatusForbidden, "token-rejected"},
		{"token without its signature", "debit", tok(b.Plain), debit(account, 1), http.StatusForbidden, "token-rejected"},
		{"token with another's signature", "debit", tok(b.Plain + a.Token[len(a.Plain):]), debit(account, 1), http.StatusForbidden, "token-rejected"},
		{"token of another resource", "debit", tok(b.Token), debit("acct-4100", 1), http.StatusForbidden, "token-rejected"},
		{"unknown operation", "drop_table", tok(b.Token), debit(account, 1), http.StatusNotFound, "unknown-operation"},
		{"unknown argument", "debit", tok(b.Token), `{"account": "acct-41", "amount_cents": 1, "sql": "DROP TABLE x"}`, http.StatusBadRequest, "bad-request"},
		{"mistyped argument", "debit", tok(b.Token), `{"account": "acct-41", "amount_cents": "1"}`, http.StatusBadRequest, "bad-request"},
		{"missing argument", "debit", tok(b.Token), `{"account": "acct-41"}`, http.StatusBadRequest, "bad-request"},
		{"argument out of range", "debit", tok(b.Token), debit(account, 0), http.StatusBadRequest, "bad-request"},
		{"argument against pattern", "debit", tok(b.Token), `{"account": "acct-41' OR '1'='1", "amount_cents": 1}`, http.StatusBadRequest, "bad-request"},
		{"malformed JSON", "debit", tok(b.Token), `{"account": "acct-41", `, http.StatusBadRequest, "bad-request"},
		{"body too large", "debit", tok(b.Token), `{"account": "` + strings.Repeat("x", 5000) + `"}`, http.StatusRequestEntityTooLarge, "too-large"},
		{"expect_rows not met", "debit", tok(b.Token), debit(account, 1_000_000), http.StatusConflict, "precondition-failed"},
		{"unknown account", "debit", tok(unknown.Token), debit("acct-4100", 1), http.StatusConflict, "precondition-failed"},
		{"constraint violation", "open_account", tok(b.Token), `{"account": "acct-41"}`, http.StatusConflict, "constraint"},
	}
	audited, wantAudit := h.rejections(), 0
	for _, tt := range tests {
		if tt.kind == "stale-token" || tt.kind == "token-rejected" {
			wantAudit++
		}
		t.Run(tt.name, func(t *testing.T) {
			before := h.state()
			r := h.do(http.MethodPost, "/v1/ops/"+tt.op, tt.headers, tt.body)
			if r.Status != tt.status || r.Problem.Kind() != tt.kind || r.Problem.Status != tt.status {
				t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, tt.status, tt.kind)
			}
			if after := h.state(); after != before {
				t.Fatalf("a refused request changed the database: %s -> %s", before, after)
			}
		})
	}
	// The audit is written off the request path: wait for it, then check
	// that it holds exactly the stale and unissued tokens' refusals.
	testenv.WaitFor(10*time.Second, func() bool { return h.rejections() == audited+wantAudit })
	if got := h.rejections(); got != audited+wantAudit {
		t.Fatalf("rejection audit rows %d -> %d, want %d more", audited, got, wantAudit)
	}
	var reason, presented, current string
	err := h.pool.QueryRow(t.Context(), "SELECT reason, presented, current FROM fencegw.rejections WHERE reason = 'stale-token'").Scan(&reason, &presented, &current)
	if err != nil || presented != a.Plain || current != b.Plain {
		t.Fatalf("audited stale write: %s %s %s, %v; want presented %s current %s", reason, presented, current, err, a.Token, b.Token)
	}
	if got := h.balance(account); got != 900 {
		t.Fatalf("balance = %d, want 900", got)
	}
}

func tok(s string) http.Header { return http.Header{"Fencing-Token": {s}} }

func (h *harness) rejections() int {
	h.t.Helper()
	var n int
	if err := h.pool.QueryRow(h.t.Context(), "SELECT count(*) FROM fencegw.rejections").Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// TestChunkedBodies: a body sent without Content-Length is read up to the
// limit and no further; over it the write is refused and nothing changes.
func TestChunkedBodies(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const account = "acct-42"
	l := h.mustAcquire("account/"+account, 5, 0)
	defer h.release(l)
	chunked := func(s string) io.Reader { return io.MultiReader(strings.NewReader(s)) }

	before := h.state()
	r := h.send(http.MethodPost, "/v1/ops/debit", tok(l.Token), chunked(`{"account": "`+strings.Repeat("x", 5000)+`"}`))
	if r.Status != http.StatusRequestEntityTooLarge || r.Problem.Kind() != "too-large" {
		t.Fatalf("chunked body over the limit: %d %s, want 413 too-large", r.Status, r.Body)
	}
	if after := h.state(); after != before {
		t.Fatalf("a refused request changed the database: %s -> %s", before, after)
	}
	padded := `{"account": "` + account + `", "amount_cents": 7}` + strings.Repeat(" ", 4096-41) // the limit to the byte
	if len(padded) != 4096 {
		t.Fatalf("padded body is %d bytes", len(padded))
	}
	if r := h.send(http.MethodPost, "/v1/ops/debit", tok(l.Token), chunked(padded)); r.Status != http.StatusOK {
		t.Fatalf("chunked body at the limit: %d %s", r.Status, r.Body)
	}
	if r := h.send(http.MethodPost, "/v1/ops/debit", tok(l.Token), chunked(padded+" ")); r.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked body one byte over the limit: %d %s", r.Status, r.Body)
	}
	if got := h.balance(account); got != 993 {
		t.Fatalf("balance %d, want 993: exactly the one write within the limit", got)
	}
}

// TestAuditFloodIsSummarised is issue 7's flood: a client sends forged
// tokens as fast as it can. The audit records its first refusals, then one
// row per second stands for the rest (suppressed), so the table grows by a
// handful of rows, not one per request; every refusal is still accounted
// for, and a real stale write during the flood is recorded as it is.
func TestAuditFloodIsSummarised(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const account, resource = "acct-77", "account/acct-77"
	a := h.mustAcquire(resource, 10, 0)
	h.release(a)
	b := h.mustAcquire(resource, 10, 0)
	defer h.release(b)
	if r := h.write("credit", b.Token, debit(account, 1)); r.Status != http.StatusOK {
		t.Fatalf("B's credit: %d %s", r.Status, r.Body)
	}
	const flood = 400
	start := time.Now()
	for i := range flood {
		if r := h.write("debit", fmt.Sprintf("1:%d", 1_000_000+i), debit(account, 1)); r.Status != http.StatusForbidden {
			t.Fatalf("forged token %d: %d %s", i, r.Status, r.Body)
		}
	}
	if r := h.write("debit", a.Token, debit(account, 1)); r.Status != http.StatusConflict {
		t.Fatalf("A's stale write: %d %s", r.Status, r.Body)
	}
	var rows, accounted, stale int
	settled := testenv.WaitFor(15*time.Second, func() bool {
		err := h.pool.QueryRow(t.Context(), `SELECT count(*), coalesce(sum(1 + suppressed), 0),
			count(*) FILTER (WHERE reason = 'stale-token') FROM fencegw.rejections WHERE resource = $1`, resource).Scan(&rows, &accounted, &stale)
		return err == nil && accounted == flood+1 && stale == 1
	})
	if !settled {
		t.Fatalf("the audit accounts for %d refusals in %d rows, %d stale; want %d and 1 stale", accounted, rows, stale, flood+1)
	}
	// The rate lets 50 at once and 10 a second through, and a summary a
	// second stands for the rest: a bound from the flood's length, however
	// slow the machine was.
	secs := int(time.Since(start).Seconds()) + 1
	if limit := 50 + 10*secs + 2*secs + 2; rows > limit {
		t.Fatalf("%d audit rows for %d refusals in %ds: a flood must be summarised (at most %d)", rows, flood, secs, limit)
	}
	t.Logf("%d refusals recorded in %d rows", accounted, rows)
}

// TestAFloodHidesNoOtherResource: a stale token replayed in a flood on one
// account is summarised, and a genuine stale write on another account
// meanwhile still has a row of its own, not a share of the flood's
// summary.
func TestAFloodHidesNoOtherResource(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	stale := func(account string) (old lease) {
		resource := "account/" + account
		old = h.mustAcquire(resource, 10, 0)
		h.release(old)
		successor := h.mustAcquire(resource, 10, 0)
		defer h.release(successor)
		if r := h.write("credit", successor.Token, debit(account, 1)); r.Status != http.StatusOK {
			t.Fatalf("the successor's write on %s: %d %s", account, r.Status, r.Body)
		}
		return old
	}
	flooded, quiet := stale("acct-79"), stale("acct-80")
	flood := func(n int) {
		for range n {
			if r := h.write("debit", flooded.Token, debit("acct-79", 1)); r.Status != http.StatusConflict {
				t.Fatalf("the flood: %d %s", r.Status, r.Body)
			}
		}
	}
	flood(100)
	if r := h.write("debit", quiet.Token, debit("acct-80", 1)); r.Status != http.StatusConflict {
		t.Fatalf("the quiet stale write: %d %s", r.Status, r.Body)
	}
	flood(100)
	var rows int
	recorded := testenv.WaitFor(15*time.Second, func() bool {
		err := h.pool.QueryRow(t.Context(), `SELECT count(*) FROM fencegw.rejections
			WHERE resource = 'account/acct-80' AND reason = 'stale-token' AND presented = $1`, quiet.Plain).Scan(&rows)
		return err == nil && rows == 1
	})
	if !recorded {
		t.Fatalf("the stale write on acct-80 has %d rows in fencegw.rejections beside the flood on acct-79, want 1", rows)
	}
}

// TestBatchRefusalAuditedUnderItsWrite: a stale token that refuses a batch
// is recorded under the operation of the write that carried it; the
// problem document names that write by its index instead.
func TestBatchRefusalAuditedUnderItsWrite(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	old, cur := h.succession("account/acct-43", 5)
	defer h.release(cur)
	other := h.mustAcquire("account/acct-49", 5, 0)
	defer h.release(other)
	if r := h.write("credit", cur.Token, debit("acct-43", 1)); r.Status != http.StatusOK {
		t.Fatalf("setup write: %d %s", r.Status, r.Body)
	}
	before, audited := h.state(), h.rejections()
	body := batchBody(batchWrite("credit", debit("acct-49", 1), `"`+other.Token+`"`), batchWrite("debit", debit("acct-43", 1), `"`+old.Token+`"`))
	r := h.do(http.MethodPost, "/v1/batch", nil, body)
	if r.Status != http.StatusConflict || r.Problem.Kind() != "stale-token" || r.Problem.Index == nil || *r.Problem.Index != 1 || r.Problem.Operation != "" {
		t.Fatalf("batch with a stale write: %d %s, want 409 stale-token naming write 1 and no operation", r.Status, r.Body)
	}
	if h.state() != before {
		t.Fatal("a refused batch changed the database")
	}
	testenv.WaitFor(10*time.Second, func() bool { return h.rejections() == audited+1 })
	var op, presented string
	err := h.pool.QueryRow(t.Context(), "SELECT operation, presented FROM fencegw.rejections WHERE resource = 'account/acct-43'").Scan(&op, &presented)
	if err != nil || op != "debit" || presented != old.Plain {
		t.Fatalf("audited: operation %q presented %q, %v; want debit, %s", op, presented, err, old.Plain)
	}
}

// TestTokenRequiredShowsTheWholeToken: a request without Fencing-Token is
// told to send the token whole, as its lease grant returned it; a bare
// E:R, which the detail once named, is refused as unsigned.
func TestTokenRequiredShowsTheWholeToken(t *testing.T) {
	h := newHarness(t, readPolicy(t))
	const account, resource = "acct-4101", "account/acct-4101"
	l := h.mustAcquire(resource, 10, 0)
	defer h.release(l)
	for _, tt := range []struct {
		name, path, body, detail string
	}{
		{"write", "/v1/ops/debit", debit(account, 1), "Fencing-Token: E:R:SIGNATURE"},
		{"read", "/v1/reads/balance", `{"account": "` + account + `"}`, "Fencing-Token: E:R:SIGNATURE"},
		{"check", "/v1/fences/check", `{"resource": "` + resource + `"}`, "Fencing-Token: E:R:SIGNATURE"},
		{"write with roles", "/v1/ops/transfer", transferBody(account, "acct-4102", 1), `Fencing-Token: from="E:R:SIGNATURE", to="E:R:SIGNATURE"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(http.MethodPost, tt.path, nil, tt.body)
			if r.Status != http.StatusPreconditionRequired || !strings.Contains(r.Problem.Detail, tt.detail) || !strings.Contains(r.Problem.Detail, "as its") {
				t.Fatalf("got %d %s, want 428 saying %q, the token as its grant returned it", r.Status, r.Body, tt.detail)
			}
		})
	}
	if r := h.do(http.MethodPost, "/v1/ops/debit", tok(l.Plain), debit(account, 1)); r.Status != http.StatusForbidden || r.Problem.Kind() != "token-rejected" {
		t.Fatalf("E:R alone: %d %s, want 403 token-rejected", r.Status, r.Body)
	}
}
