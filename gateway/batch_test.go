package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway"
)

func batchWrite(op, args, token string) string {
	return fmt.Sprintf(`{"operation": %q, "args": %s, "token": %s}`, op, args, token)
}

func batchBody(writes ...string) string { return `{"writes": [` + strings.Join(writes, ", ") + `]}` }

// TestBatchOverHTTP: a batch applies every write in one transaction and
// answers each; one refused write refuses the batch, naming its index, and
// nothing is written; a keyed batch runs once.
func TestBatchOverHTTP(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	a, b := h.mustAcquire("account/acct-73", 10, 0), h.mustAcquire("account/acct-74", 10, 0)
	defer h.release(a)
	defer h.release(b)
	ok := batchBody(
		batchWrite("debit", debit("acct-73", 100), `"`+a.Token+`"`),
		batchWrite("transfer", transferBody("acct-73", "acct-74", 50), fmt.Sprintf(`{"from": %q, "to": %q}`, a.Token, b.Token)),
	)
	first := h.do(http.MethodPost, "/v1/batch", http.Header{"Idempotency-Key": {"batch-1"}}, ok)
	var res gateway.BatchResult
	if first.Status != http.StatusOK {
		t.Fatalf("batch: %d %s", first.Status, first.Body)
	}
	decodeJSON(t, first.Body, &res)
	if len(res.Writes) != 2 || res.Writes[0].Operation != "debit" || len(res.Writes[1].Fences) != 2 {
		t.Fatalf("answer %s: want the debit's and the transfer's results", first.Body)
	}
	again := h.do(http.MethodPost, "/v1/batch", http.Header{"Idempotency-Key": {"batch-1"}}, ok)
	if again.Status != http.StatusOK || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
		t.Fatalf("keyed retry: %d %s; want the first answer replayed", again.Status, again.Body)
	}
	if x, y := h.balance("acct-73"), h.balance("acct-74"); x != 850 || y != 1050 {
		t.Fatalf("balances %d, %d; want 850, 1050: applied once", x, y)
	}
	// A batch of one is answered as a batch.
	one := h.do(http.MethodPost, "/v1/batch", nil, batchBody(batchWrite("credit", debit("acct-74", 1), `"`+b.Token+`"`)))
	res = gateway.BatchResult{}
	if one.Status != http.StatusOK {
		t.Fatalf("batch of one: %d %s", one.Status, one.Body)
	}
	if decodeJSON(t, one.Body, &res); len(res.Writes) != 1 || res.Writes[0].Operation != "credit" {
		t.Fatalf("batch of one answered %s; want {\"writes\": [the credit's result]}", one.Body)
	}

	many := make([]string, gateway.MaxBatchWrites+1)
	for i := range many {
		many[i] = batchWrite("credit", debit("acct-74", 1), `"`+b.Token+`"`)
	}
	roomy := h.sibling(func(c *gateway.Config) { c.MaxBodyBytes = 1 << 20 })
	before := h.state()
	if r := roomy.do(http.MethodPost, "/v1/batch", nil, batchBody(many...)); r.Status != http.StatusBadRequest || !strings.Contains(r.Problem.Detail, "more than 100 writes") {
		t.Fatalf("%d writes: %d %s; want 400 naming the limit", len(many), r.Status, r.Body)
	}
	if after := h.state(); after != before {
		t.Fatal("a refused batch changed state")
	}
	if r := roomy.do(http.MethodPost, "/v1/batch", nil, batchBody(many[1:]...)); r.Status != http.StatusOK {
		t.Fatalf("%d writes: %d %s; want 200", len(many)-1, r.Status, r.Body)
	}

	for _, tt := range []struct {
		name   string
		body   string
		status int
		kind   string
		index  int // -1: none
	}{
		{"an overdraw", batchBody(batchWrite("credit", debit("acct-74", 1), `"`+b.Token+`"`), batchWrite("debit", debit("acct-73", 99999), `"`+a.Token+`"`)), 409, "precondition-failed", 1},
		{"an unknown operation", batchBody(batchWrite("credit", debit("acct-74", 1), `"`+b.Token+`"`), batchWrite("withdraw", debit("acct-73", 1), `"`+a.Token+`"`)), 404, "unknown-operation", 1},
		{"a bad argument", batchBody(batchWrite("credit", `{"account": "acct-74"}`, `"`+b.Token+`"`)), 400, "bad-request", 0},
		{"a role missing", batchBody(batchWrite("transfer", transferBody("acct-73", "acct-74", 1), fmt.Sprintf(`{"from": %q}`, a.Token))), 428, "token-required", 0},
		{"one resource, two tokens", batchBody(batchWrite("credit", debit("acct-73", 1), `"`+a.Token+`"`), batchWrite("credit", debit("acct-73", 1), `"1:1"`)), 400, "bad-request", 1},
		{"two roles on one resource, that resource fenced before", batchBody(batchWrite("credit", debit("acct-73", 1), `"`+a.Token+`"`), batchWrite("transfer", transferBody("acct-73", "acct-73", 1), fmt.Sprintf(`{"from": %q, "to": %q}`, a.Token, a.Token))), 400, "bad-request", 1},
		{"a batch of one, two roles on one resource", batchBody(batchWrite("transfer", transferBody("acct-73", "acct-73", 1), fmt.Sprintf(`{"from": %q, "to": %q}`, a.Token, a.Token))), 400, "bad-request", 0},
		{"an unknown key", `{"writes": [], "atomic": true}`, 400, "bad-request", -1},
		{"no writes", `{"writes": []}`, 400, "bad-request", -1},
		{"not JSON", `{"writes": [`, 400, "bad-request", -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := h.state()
			r := h.do(http.MethodPost, "/v1/batch", nil, tt.body)
			if r.Status != tt.status || r.Problem.Kind() != tt.kind {
				t.Fatalf("%d %s; want %d %s", r.Status, r.Body, tt.status, tt.kind)
			}
			if (tt.index < 0) != (r.Problem.Index == nil) || (tt.index >= 0 && *r.Problem.Index != tt.index) {
				t.Fatalf("index %v in %s; want %d", r.Problem.Index, r.Body, tt.index)
			}
			if after := h.state(); after != before {
				t.Fatal("a refused batch changed state")
			}
		})
	}
}
