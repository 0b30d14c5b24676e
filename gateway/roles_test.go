package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func transferBody(from, to string, cents int) string {
	return fmt.Sprintf(`{"from": %q, "to": %q, "amount_cents": %d}`, from, to, cents)
}

func roleTokens(from, to string) http.Header {
	return http.Header{"Fencing-Token": {fmt.Sprintf(`from=%q, to=%q`, from, to)}}
}

// TestTransferOverHTTP: one token per role in the Fencing-Token
// dictionary; both accounts change in one transaction, and the answer
// names each role's fence.
func TestTransferOverHTTP(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	a, b := h.mustAcquire("account/acct-63", 10, 0), h.mustAcquire("account/acct-64", 10, 0)
	defer h.release(a)
	defer h.release(b)
	r := h.do(http.MethodPost, "/v1/ops/transfer", roleTokens(a.Token, b.Token), transferBody("acct-63", "acct-64", 250))
	if r.Status != http.StatusOK {
		t.Fatalf("transfer: %d %s", r.Status, r.Body)
	}
	if len(r.Result.Fences) != 2 || r.Result.Fences[0].Role != "from" || r.Result.Fences[0].Resource != "account/acct-63" ||
		r.Result.Fences[1].Token.String() != b.Plain || r.Result.Resource != "" {
		t.Fatalf("answer %s: want the fences of from and to", r.Body)
	}
	if x, y := h.balance("acct-63"), h.balance("acct-64"); x != 750 || y != 1250 {
		t.Fatalf("balances %d, %d; want 750, 1250", x, y)
	}
	if h.fence("account/acct-63") != a.Plain || h.fence("account/acct-64") != b.Plain {
		t.Fatal("fences not advanced to the roles' tokens")
	}
}

// TestTransferTokenFieldRefusals: every malformed, incomplete or
// misdirected Fencing-Token field is refused before anything is written.
func TestTransferTokenFieldRefusals(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	a, b := h.mustAcquire("account/acct-65", 10, 0), h.mustAcquire("account/acct-66", 10, 0)
	defer h.release(a)
	defer h.release(b)
	body := transferBody("acct-65", "acct-66", 1)
	for _, tt := range []struct {
		name   string
		field  []string // nil: no header
		op     string
		body   string
		status int
		detail string
	}{
		{"no header", nil, "transfer", body, 428, `from="E:R:SIGNATURE", to="E:R:SIGNATURE"`},
		{"a role missing", []string{`from="` + a.Token + `"`}, "transfer", body, 428, "no token for role to"},
		{"an unknown role", []string{`from="` + a.Token + `", to="` + b.Token + `", via="1:1"`}, "transfer", body, 400, `no role "via"`},
		{"a role twice", []string{`from="` + a.Token + `", from="` + b.Token + `"`}, "transfer", body, 400, "given twice"},
		{"one token for two roles", []string{a.Token}, "transfer", body, 400, "has roles from, to"},
		{"roles for one resource", []string{`account="` + a.Token + `"`}, "debit", debit("acct-65", 1), 400, "writes one resource"},
		{"unquoted", []string{`from=` + a.Token + `, to="` + b.Token + `"`}, "transfer", body, 400, "quoted string"},
		{"a parameter", []string{`from="` + a.Token + `";x=1, to="` + b.Token + `"`}, "transfer", body, 400, "parameters"},
		{"trailing comma", []string{`from="` + a.Token + `", to="` + b.Token + `",`}, "transfer", body, 400, "trailing"},
		{"malformed token", []string{`from="1:x", to="` + b.Token + `"`}, "transfer", body, 400, "revision"},
		{"more members than any operation has roles", []string{manyMembers(16) + `from="` + a.Token + `", to="` + b.Token + `"`}, "transfer", body, 400, "more than 16 roles"},
		{"one account twice", []string{`from="` + a.Token + `", to="` + a.Token + `"`}, "transfer", transferBody("acct-65", "acct-65", 1), 400, "must be different resources"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := h.state()
			hdr := http.Header{}
			if tt.field != nil {
				hdr["Fencing-Token"] = tt.field
			}
			r := h.do(http.MethodPost, "/v1/ops/"+tt.op, hdr, tt.body)
			if r.Status != tt.status || !strings.Contains(r.Problem.Detail, tt.detail) {
				t.Fatalf("%d %s; want %d with %q", r.Status, r.Body, tt.status, tt.detail)
			}
			if after := h.state(); after != before {
				t.Fatal("a refused transfer changed state")
			}
		})
	}
	// A dictionary may come split over field lines (RFC 9110).
	split := http.Header{"Fencing-Token": {`from="` + a.Token + `"`, `to="` + b.Token + `"`}}
	if r := h.do(http.MethodPost, "/v1/ops/transfer", split, body); r.Status != http.StatusOK {
		t.Fatalf("dictionary over two field lines: %d %s", r.Status, r.Body)
	}
}

// TestStaleTransferNamesTheRole: B took acct-68 after A and wrote; A's
// transfer into acct-68 is refused whole, naming the role, the resource
// and the current token.
func TestStaleTransferNamesTheRole(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	from := h.mustAcquire("account/acct-67", 10, 0)
	defer h.release(from)
	a := h.mustAcquire("account/acct-68", 10, 0)
	h.release(a)
	b := h.mustAcquire("account/acct-68", 10, 0)
	defer h.release(b)
	if r := h.write("credit", b.Token, debit("acct-68", 1)); r.Status != http.StatusOK {
		t.Fatalf("B's credit: %d %s", r.Status, r.Body)
	}
	before := h.state()
	r := h.do(http.MethodPost, "/v1/ops/transfer", roleTokens(from.Token, a.Token), transferBody("acct-67", "acct-68", 10))
	p := r.Problem
	if r.Status != http.StatusConflict || p.Kind() != "stale-token" || p.Role != "to" || p.Resource != "account/acct-68" ||
		p.PresentedToken != a.Plain || p.CurrentToken != b.Plain {
		t.Fatalf("%d %s; want 409 stale-token naming role to, account/acct-68, %s and %s", r.Status, r.Body, a.Token, b.Token)
	}
	if after := h.state(); after != before {
		t.Fatal("a refused transfer changed state")
	}
}

// TestRoleTokenRejectedByTheAuthority: in holder mode every role's token
// must be its lock's live holder; the refusal names the role.
func TestRoleTokenRejectedByTheAuthority(t *testing.T) {
	h := newHarness(t, holderPolicy(t))
	from := h.mustAcquire("account/acct-69", 10, 0)
	defer h.release(from)
	to := h.mustAcquire("account/acct-70", 10, 0)
	h.release(to)
	before := h.state()
	r := h.do(http.MethodPost, "/v1/ops/transfer", roleTokens(from.Token, to.Token), transferBody("acct-69", "acct-70", 10))
	if r.Status != http.StatusForbidden || r.Problem.Kind() != "token-rejected" || r.Problem.Role != "to" || r.Problem.Resource != "account/acct-70" {
		t.Fatalf("%d %s; want 403 token-rejected naming role to", r.Status, r.Body)
	}
	if after := h.state(); after != before {
		t.Fatal("a refused transfer changed state")
	}
}

// manyMembers is n dictionary members r0="1:1", r1="1:1", ...
func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `r%d="1:1", `, i)
	}
	return b.String()
}
