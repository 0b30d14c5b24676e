package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway"
)

// TestAForgeryIsRefusedWithoutATurn is issue 34's rule that a token's
// signature is decided before its call takes a turn at the admission
// gate: with the gate's one turn held by a write waiting in PostgreSQL, a
// write, a read and a check with forged tokens (one whose key this
// replica has, so its signature is judged at once, and one whose signature
// no key verifies, which waits for a reload of the keys) are answered 403
// while the turn is still held, and write nothing. Before, each waited
// for the turn and was refused 503 when the queue timeout ran out. A
// keyed write is the exception the gate makes: its refusal must be stored
// as its key's outcome, which takes PostgreSQL, so it waits for a turn.
func TestAForgeryIsRefusedWithoutATurn(t *testing.T) {
	h := newHarness(t, readPolicy(t))
	one := h.sibling(func(c *gateway.Config) {
		c.MaxInFlight = 1
		// Failures of this test, not waits it expects: the write in
		// flight holds the turn until it is unblocked.
		c.QueueTimeout, c.WriteTimeout = time.Minute, time.Minute
	})
	const account, other = "acct-22", "acct-23"
	l := h.mustAcquire("account/"+account, 60, 0)
	if r := h.write("credit", l.Token, debit(account, 1)); r.Status != http.StatusOK { // the fence row exists from here on
		t.Fatalf("credit: %d %s", r.Status, r.Body)
	}
	o := h.mustAcquire("account/"+other, 60, 0)
	before, beforeOther, logged := h.balance(account), h.balance(other), h.logCount(other)

	unblock := blockFence(t, h, "account/"+account)
	inFlight := make(chan response, 1)
	go func() { inFlight <- one.write("credit", l.Token, debit(account, 5)) }()
	waitOrFail(t, "a write to take the only turn", func() bool {
		return strings.Contains(metricsText(t, one.base), "fencegw_writes_in_flight 1")
	})

	// A signature whose first character is changed is verified by no
	// key; one signed for another resource is a token of this
	// authority's key, for the wrong resource.
	i := strings.LastIndexByte(o.Token, ':') + 1
	unverified := forge(o.Token)
	for _, c := range []struct{ name, token string }{
		{"no key verifies its signature", unverified},
		{"signed for another resource", o.Token[:i] + l.Token[strings.LastIndexByte(l.Token, ':')+1:]},
	} {
		hdr := http.Header{gateway.TokenHeader: {c.token}}
		for _, call := range []struct{ path, body string }{
			{"/v1/ops/credit", debit(other, 3)},
			{"/v1/reads/balance", fmt.Sprintf(`{"account": %q}`, other)},
			{"/v1/fences/check", fmt.Sprintf(`{"resource": "account/%s"}`, other)},
		} {
			if r := one.do(http.MethodPost, call.path, hdr, call.body); r.Status != http.StatusForbidden || r.Problem.Kind() != "token-rejected" {
				t.Errorf("%s, %s, with the only turn held: %d %s, want 403 token-rejected at once", call.path, c.name, r.Status, r.Body)
			}
		}
	}
	select {
	case r := <-inFlight:
		t.Fatalf("the write in flight ended (%d %s) before the forgeries were answered: they may have had its turn", r.Status, r.Body)
	default:
	}
	keyedForgery := make(chan response, 1)
	go func() {
		keyedForgery <- one.do(http.MethodPost, "/v1/ops/credit", keyed(unverified, "k38"), debit(other, 3))
	}()
	waitOrFail(t, "the keyed forgery to wait for a turn", func() bool {
		return strings.Contains(metricsText(t, one.base), "fencegw_writes_waiting 1")
	})

	unblock()
	if r := <-inFlight; r.Status != http.StatusOK {
		t.Fatalf("the write in flight: %d %s, want 200", r.Status, r.Body)
	}
	if r := <-keyedForgery; r.Status != http.StatusForbidden || r.Problem.Kind() != "token-rejected" {
		t.Fatalf("the keyed forgery once a turn was free: %d %s, want 403 token-rejected", r.Status, r.Body)
	}
	if got := h.balance(account); got != before+5 {
		t.Fatalf("balance of %s %d, want %d: only the admitted write applied", account, got, before+5)
	}
	if got, n := h.balance(other), h.logCount(other); got != beforeOther || n != logged {
		t.Fatalf("%s: balance %d (want %d), %d write_log rows added: a forgery wrote", other, got, beforeOther, n-logged)
	}
}
