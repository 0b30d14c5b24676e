package gateway_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// stampOperations store the token they write under, as an application
// keeping its own record of who wrote would: in text, in bytea, in the
// answer (RETURNING) and in a refusal's message.
const stampOperations = `  stamp:
    resource: account
    args:
      account: {type: string, max_length: 64, pattern: "acct-[0-9]+"}
      note: {type: string, max_length: 64}
    statements:
      - sql: |
          INSERT INTO app.stamps (resource, token, raw, note)
          VALUES (:_resource, :_token, convert_to(:_token, 'UTF8'), :note)
          RETURNING token, note
  stamp_pair:
    resources: {from: "account/{from}", to: "account/{to}"}
    args:
      from: {type: string, max_length: 64, pattern: "acct-[0-9]+"}
      to: {type: string, max_length: 64, pattern: "acct-[0-9]+"}
      note: {type: string, max_length: 64}
    statements:
      - sql: |
          INSERT INTO app.stamps (resource, token, raw, note)
          VALUES (:_resource_from, :_token_from, convert_to(:_token_from, 'UTF8'), :note),
                 (:_resource_to, :_token_to, convert_to(:_token_to, 'UTF8'), :note)
          RETURNING token
  stamp_refused:
    resource: account
    args:
      account: {type: string, max_length: 64, pattern: "acct-[0-9]+"}
    statements:
      - sql: SELECT app.refuse(:_token) AS refused
`

const stampSchema = `
CREATE SCHEMA app;
CREATE TABLE app.stamps (
    id       bigserial PRIMARY KEY,
    resource text  NOT NULL,
    token    text  NOT NULL,
    raw      bytea NOT NULL,
    note     text  NOT NULL,
    UNIQUE (token, note)
);
CREATE FUNCTION app.refuse(token text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'refused under token %', token USING ERRCODE = 'PT409';
END
$$;`

// TestGrantedSignaturesStayInTheGrant: a token's signature is a
// capability, shown only in the lease grant. After a varied workload
// whose policy stores :_token (accepted writes keyed and not, a transfer,
// a batch, a constraint and an application refusal, a stale and two
// unissued tokens refused, keepalives, observers), no granted signature is
// in any row of any table, in the log, or in any other answer.
func TestGrantedSignaturesStayInTheGrant(t *testing.T) {
	h := newHarness(t, strings.Replace(demoPolicy(t, "monotonic"), "\noperations:\n", "\noperations:\n"+stampOperations, 1))
	if _, err := h.pool.Exec(context.Background(), stampSchema); err != nil {
		t.Fatal(err)
	}
	var logged testenv.Buffer
	gw := h.sibling(func(c *gateway.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})

	var granted signatures
	var answers []exchange
	expect := func(what string, r response, status int) response {
		t.Helper()
		if r.Status != status {
			t.Fatalf("%s: %d %s, want %d", what, r.Status, r.Body, status)
		}
		answers = append(answers, exchange{what, r})
		return r
	}
	acquire := func(resource string) lease {
		l := gw.mustAcquire(resource, 30, 0)
		granted.add(t, l.Token)
		return l
	}
	keyed := func(token, key string) http.Header {
		return http.Header{"Fencing-Token": {token}, "Idempotency-Key": {key}}
	}
	stamp := func(account, note string) string { return fmt.Sprintf(`{"account": %q, "note": %q}`, account, note) }
	pair := func(from, to, note string) string {
		return fmt.Sprintf(`{"from": %q, "to": %q, "note": %q}`, from, to, note)
	}

	a, b := acquire("account/acct-81"), acquire("account/acct-82")
	for _, l := range []lease{a, b} {
		r := expect("keepalive", gw.do(http.MethodPost, "/v1/leases/"+l.ID+"/keepalive", nil, ""), http.StatusOK)
		answers = answers[:len(answers)-1] // a renewal may hand its holder the token again
		var renewed struct{ Token string }
		decodeJSON(t, r.Body, &renewed)
		if renewed.Token != "" {
			granted.add(t, renewed.Token)
		}
	}
	expect("unkeyed stamp", gw.write("stamp", a.Token, stamp("acct-81", "unkeyed")), http.StatusOK)
	expect("keyed stamp", gw.do(http.MethodPost, "/v1/ops/stamp", keyed(a.Token, "k1"), stamp("acct-81", "keyed")), http.StatusOK)
	expect("keyed stamp replayed", gw.do(http.MethodPost, "/v1/ops/stamp", keyed(a.Token, "k1"), stamp("acct-81", "keyed")), http.StatusOK)
	expect("keyed stamp refused by a constraint", gw.do(http.MethodPost, "/v1/ops/stamp", keyed(a.Token, "k2"), stamp("acct-81", "unkeyed")), http.StatusConflict)
	expect("keyed stamp refused by the application", gw.do(http.MethodPost, "/v1/ops/stamp_refused", keyed(a.Token, "k3"), `{"account": "acct-81"}`), http.StatusConflict)
	expect("credit", gw.write("credit", b.Token, debit("acct-82", 5)), http.StatusOK)
	expect("transfer", gw.do(http.MethodPost, "/v1/ops/stamp_pair", roleTokens(a.Token, b.Token), pair("acct-81", "acct-82", "pair")), http.StatusOK)
	batch := batchBody(
		batchWrite("stamp", stamp("acct-82", "batch"), `"`+b.Token+`"`),
		batchWrite("stamp_pair", pair("acct-81", "acct-82", "batch pair"), fmt.Sprintf(`{"from": %q, "to": %q}`, a.Token, b.Token)),
	)
	expect("keyed batch", gw.do(http.MethodPost, "/v1/batch", http.Header{"Idempotency-Key": {"b1"}}, batch), http.StatusOK)

	old, cur := gw.succession("account/acct-83", 30)
	granted.add(t, old.Token)
	granted.add(t, cur.Token)
	expect("successor's stamp", gw.write("stamp", cur.Token, stamp("acct-83", "successor")), http.StatusOK)
	expect("stale stamp", gw.write("stamp", old.Token, stamp("acct-83", "stale")), http.StatusConflict)
	expect("another account's token", gw.write("stamp", b.Token, stamp("acct-81", "wrong resource")), http.StatusForbidden)
	expect("another lease's signature", gw.write("stamp", a.Plain+b.Token[len(b.Plain):], stamp("acct-81", "forged")), http.StatusForbidden)
	const audited = 3 // the stale and the two unissued tokens

	expect("observe", gw.do(http.MethodGet, "/v1/leases?resource=account/acct-81", nil, ""), http.StatusOK)
	expect("status", gw.do(http.MethodGet, "/v1/status", nil, ""), http.StatusOK)
	expect("status page", gw.do(http.MethodGet, "/status", nil, ""), http.StatusOK)
	expect("metrics", gw.do(http.MethodGet, "/metrics", nil, ""), http.StatusOK)
	for _, l := range []lease{a, b, cur} {
		gw.release(l)
	}

	// The audit is written off the request path: its rows are part of
	// what is searched, so wait for them.
	if !testenv.WaitFor(30*time.Second, func() bool { return h.rejections() == audited }) {
		t.Fatalf("fencegw.rejections has %d rows, want %d", h.rejections(), audited)
	}
	var stamps int
	if err := h.pool.QueryRow(context.Background(), "SELECT count(*) FROM app.stamps WHERE starts_with(token, $1)", a.Plain).Scan(&stamps); err != nil || stamps != 4 {
		t.Fatalf("app.stamps has %d rows of %s (%v), want 4: the search below would prove nothing", stamps, a.Plain, err)
	}
	if !strings.Contains(logged.String(), a.Plain) || !strings.Contains(logged.String(), old.Plain) {
		t.Fatalf("the log names neither %s nor %s: the search below would prove nothing:\n%s", a.Plain, old.Plain, logged.String())
	}

	for _, v := range dumpDatabase(t, h.pool) {
		if spelling := granted.in(v.data); spelling != "" {
			t.Errorf("%s holds a granted signature (%s): %s", v.where, spelling, v.data)
		}
	}
	if spelling := granted.in([]byte(logged.String())); spelling != "" {
		t.Errorf("the log holds a granted signature (%s):\n%s", spelling, logged.String())
	}
	for _, x := range answers {
		if spelling := granted.in(x.r.Body); spelling != "" {
			t.Errorf("the answer to %s holds a granted signature (%s): %s", x.what, spelling, x.r.Body)
		}
		if spelling := granted.in(fmt.Append(nil, x.r.Header)); spelling != "" {
			t.Errorf("the headers of the answer to %s hold a granted signature (%s): %v", x.what, spelling, x.r.Header)
		}
	}
}

// exchange is a request's description and its answer.
type exchange struct {
	what string
	r    response
}

// signatures holds the signatures of granted tokens in every spelling a
// leak could take: the token's base64url, the standard alphabet, the raw
// bytes (a bytea value) and their hex (bytea shown as text).
type signatures struct {
	spellings []spelling
}

type spelling struct {
	name string
	b    []byte
}

func (s *signatures) add(t *testing.T, token string) {
	t.Helper()
	tok := mustToken(t, token)
	if !tok.Signed() {
		t.Fatalf("granted token %s has no signature", token)
	}
	sig := tok.Sig[:]
	s.spellings = append(s.spellings,
		spelling{"base64url of " + token, []byte(base64.RawURLEncoding.EncodeToString(sig))},
		spelling{"base64 of " + token, []byte(base64.RawStdEncoding.EncodeToString(sig))},
		spelling{"raw bytes of " + token, sig},
		spelling{"hex of " + token, []byte(hex.EncodeToString(sig))},
	)
}

// in names the first spelling of a granted signature that b holds, or "".
func (s *signatures) in(b []byte) string {
	for _, sp := range s.spellings {
		if bytes.Contains(b, sp.b) {
			return sp.name
		}
	}
	return ""
}
