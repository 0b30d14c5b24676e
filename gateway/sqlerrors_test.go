package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// reservePolicy is the demo policy with an operation whose SQL calls an
// application function that refuses some requests with RAISE, and the
// sql_errors that map its SQLSTATEs.
func reservePolicy(t *testing.T) string {
	return strings.Replace(demoPolicy(t, "monotonic"), "\noperations:\n", "\noperations:\n"+`  reserve:
    resource: account
    args:
      account: {type: string, max_length: 64}
      n: {type: integer, min: 0, max: 1000}
    statements:
      - sql: UPDATE demo.accounts SET balance_cents = balance_cents - demo.reserve_check(:n) WHERE id = :account
        expect_rows: 1
`, 1) + `
sql_errors:
  P0001: {status: 409, type: over-reserved, message: true}
  "42501": {status: 403, type: not-permitted}
  "23514": {status: 422, type: check-failed}
`
}

// TestSQLErrorsMapToProblems: an application's RAISE answers as the
// policy's sql_errors say (its message as detail when asked), a PTxyz
// SQLSTATE answers xyz, an unmapped one stays an internal error whose
// message only the log sees; each refusal writes nothing.
func TestSQLErrorsMapToProblems(t *testing.T) {
	h := newHarness(t, reservePolicy(t))
	if _, err := h.pool.Exec(context.Background(), `CREATE FUNCTION demo.reserve_check(n bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
	IF n = 418 THEN RAISE EXCEPTION 'short and stout' USING ERRCODE = 'PT418'; END IF;
	IF n = 7 THEN RAISE EXCEPTION 'secret internals' USING ERRCODE = 'P0002'; END IF;
	IF n = 9 THEN RAISE EXCEPTION 'secret host db.internal' USING ERRCODE = '23514'; END IF;
	IF n > 10 THEN RAISE EXCEPTION 'only 10 left, asked for %', n; END IF;
	RETURN n;
END $$`); err != nil {
		t.Fatal(err)
	}
	l := h.mustAcquire("account/acct-20", 30, 0)
	reserve := func(n string) response { return h.write("reserve", l.Token, `{"account": "acct-20", "n": `+n+`}`) }
	before := h.state()
	for _, tc := range []struct {
		n, kind string
		status  int
		detail  string
	}{
		{"20", "over-reserved", http.StatusConflict, "only 10 left, asked for 20"},
		{"418", "application", 418, "short and stout"},
		{"7", "internal", http.StatusInternalServerError, "the gateway failed to handle the request; see its log"},
		// A class fencegw answers itself (a constraint) answers as mapped,
		// with the fixed detail, not the application's message.
		{"9", "check-failed", http.StatusUnprocessableEntity, "the operation's SQL refused the write (SQLSTATE 23514); nothing was written"},
	} {
		r := reserve(tc.n)
		if r.Status != tc.status || r.Problem.Kind() != tc.kind || r.Problem.Detail != tc.detail {
			t.Errorf("reserve %s: %d %s, want %d %s with detail %q", tc.n, r.Status, r.Body, tc.status, tc.kind, tc.detail)
		}
		if strings.Contains(string(r.Body), "secret") {
			t.Errorf("reserve %s: an unmapped error's message reached the client: %s", tc.n, r.Body)
		}
	}
	if after := h.state(); after != before {
		t.Fatalf("refused reservations changed the database: %s -> %s", before, after)
	}
	if r := reserve("5"); r.Status != http.StatusOK {
		t.Fatalf("reserve 5: %d %s", r.Status, r.Body)
	}
}
