package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway"
)

// stalledWrite sends a credit of cents to account whose body stops after
// its first bytes, and returns the connection and the rest of the body.
func stalledWrite(t *testing.T, base, token, account string, cents int) (net.Conn, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	body := debit(account, cents)
	head := fmt.Sprintf("POST /v1/ops/credit HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n%s: %s\r\nContent-Length: %d\r\n\r\n",
		gateway.TokenHeader, token, len(body))
	if _, err := io.WriteString(conn, head+body[:3]); err != nil {
		t.Fatal(err)
	}
	return conn, body[3:]
}

func readStatus(t *testing.T, conn net.Conn) int {
	t.Helper()
	status, _ := readAnswer(t, conn)
	return status
}

// readAnswer reads an HTTP response from conn: its status and body.
func readAnswer(t *testing.T, conn net.Conn) (int, string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a failure, not a hang
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestWritesWaitTheirTurn: with one write in flight (waiting in
// PostgreSQL for its fence row) and a limit of one, the next waits at the
// gate for at most the queue timeout, is refused with 503 not-applied, and
// is not applied; requests other than writes do not wait.
func TestWritesWaitTheirTurn(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	one := h.sibling(func(c *gateway.Config) {
		c.MaxInFlight = 1
		c.QueueTimeout = 300 * time.Millisecond
	})
	base := one.base
	const account = "acct-36"
	l := h.mustAcquire("account/"+account, 30, 0)
	if r := h.write("credit", l.Token, debit(account, 1)); r.Status != http.StatusOK { // the fence row exists from here on
		t.Fatalf("credit: %d %s", r.Status, r.Body)
	}
	before, logged := h.balance(account), h.logCount(account)

	unblock := blockFence(t, h, "account/"+account)
	inFlight := make(chan response, 1)
	go func() { inFlight <- one.write("credit", l.Token, debit(account, 5)) }()
	waitOrFail(t, "a write to take the only turn", func() bool {
		return strings.Contains(metricsText(t, base), "fencegw_writes_in_flight 1")
	})
	refusedAtTheGate(t, one, l.Token, account)
	// Keyed, this attempt was not applied, but an earlier one with its key
	// might still be, elsewhere: the key's outcome is unknown.
	if r := one.do(http.MethodPost, "/v1/ops/credit", keyed(l.Token, "k36"), debit(account, 1)); r.Status != http.StatusServiceUnavailable ||
		r.Problem.Outcome != "unknown" || !strings.Contains(r.Problem.Detail, "retry only with the same key") {
		t.Fatalf("a keyed write refused at the gate: %d %s, want 503 with outcome unknown", r.Status, r.Body)
	}
	if m := metricsText(t, base); !strings.Contains(m, `fencegw_writes_total{operation="credit",outcome="unavailable"} 2`) ||
		!strings.Contains(m, "fencegw_admission_wait_seconds_count 2") {
		t.Errorf("the refusal at the gate is not in the metrics:\n%s", m)
	}
	if r := one.do(http.MethodGet, "/livez", nil, ""); r.Status != http.StatusOK {
		t.Fatalf("livez while the gate is full: %d", r.Status)
	}
	if _, r := one.acquire("account/acct-37", 5, 0); r.Status != http.StatusCreated {
		t.Fatalf("a lease while the gate is full: %d %s", r.Status, r.Body)
	}
	if got := h.balance(account); got != before {
		t.Fatalf("balance %d after refused writes, want %d", got, before)
	}

	unblock()
	if r := <-inFlight; r.Status != http.StatusOK {
		t.Fatalf("the write in flight: %d %s, want 200", r.Status, r.Body)
	}
	if got := h.balance(account); got != before+5 {
		t.Fatalf("balance %d, want %d: only the admitted write applied", got, before+5)
	}
	if got := h.logCount(account); got != logged+1 {
		t.Fatalf("%d write_log rows added, want 1", got-logged)
	}
	if r := one.write("credit", l.Token, debit(account, 7)); r.Status != http.StatusOK {
		t.Fatalf("a write after the turn was given back: %d %s", r.Status, r.Body)
	}
}

// TestStalledBodiesTakeNoTurn is issue 7's starvation: 300 connections send
// a write's headers and part of its body, then nothing. Their bodies are
// read before the gate, so they hold no turn: beside them, with a gate of
// eight, every write of a well-behaved client is answered 200 and none
// waits as long as the body timeout the stalled ones are given (before,
// each stalled write held a turn for all of it, and real writes waited
// that long or were refused). The bound is a failure line, not a target:
// a write takes milliseconds.
func TestStalledBodiesTakeNoTurn(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	gw := h.sibling(func(c *gateway.Config) {
		c.MaxInFlight = 8
		c.BodyTimeout = 30 * time.Second
	})
	const account = "acct-39"
	l := h.mustAcquire("account/"+account, 60, 0)
	defer h.release(l)
	for range 300 {
		stalledWrite(t, gw.base, l.Token, account, 5)
	}
	before := h.balance(account)
	const writes, bound = 40, 15 * time.Second
	var worst time.Duration
	for range writes {
		start := time.Now()
		if r := gw.write("credit", l.Token, debit(account, 1)); r.Status != http.StatusOK {
			t.Fatalf("a well-behaved write beside 300 stalled ones: %d %s", r.Status, r.Body)
		}
		worst = max(worst, time.Since(start))
	}
	if worst >= bound {
		t.Fatalf("the slowest of %d writes took %v beside 300 stalled ones: they must not hold turns (bound %v, half their body timeout)", writes, worst, bound)
	}
	if got := h.balance(account); got != before+writes {
		t.Fatalf("balance moved by %d, want %d: the stalled writes must not apply", got-before, writes)
	}
	t.Logf("slowest of %d writes beside 300 stalled ones: %v", writes, worst)
}

// refusedAtTheGate sends a credit of 1 that must wait at the gate and be
// refused with the problem the API promises.
func refusedAtTheGate(t *testing.T, h *harness, token, account string) {
	t.Helper()
	r := h.write("credit", token, debit(account, 1))
	if r.Status != http.StatusServiceUnavailable || r.Problem.Outcome != "not-applied" || r.Header.Get("Retry-After") == "" ||
		r.Problem.Kind() != "unavailable" || !strings.Contains(r.Problem.Detail, "limit of writes in flight") {
		t.Fatalf("refused at the gate: %d %s, want 503 unavailable, not-applied, Retry-After", r.Status, r.Body)
	}
}

// TestATrickledBodyGivesItsTurnBack: an admitted write whose body does not
// arrive in time is refused, not applied, and its turn goes to the next.
func TestATrickledBodyGivesItsTurnBack(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	one := h.sibling(func(c *gateway.Config) {
		c.MaxInFlight = 1
		c.BodyTimeout = 200 * time.Millisecond
	})
	base := one.base
	const account = "acct-38"
	l := h.mustAcquire("account/"+account, 30, 0)
	before := h.balance(account)

	conn, _ := stalledWrite(t, base, l.Token, account, 5)
	if status, body := readAnswer(t, conn); status != http.StatusBadRequest ||
		!strings.Contains(body, "did not arrive within 200ms") || strings.Contains(body, "127.0.0.1") {
		t.Fatalf("a body that never finished: %d %s, want 400 saying so, naming no address", status, body)
	}
	if r := one.write("credit", l.Token, debit(account, 7)); r.Status != http.StatusOK {
		t.Fatalf("the next write: %d %s", r.Status, r.Body)
	}
	if got := h.balance(account); got != before+7 {
		t.Fatalf("balance %d, want %d: the trickled write must not apply", got, before+7)
	}
}

// TestASlowWriteKeepsItsConnection: the body deadline bounds the body
// only. A write that outlasts it in PostgreSQL is answered, and the next
// request on the same keep-alive connection is served as usual.
func TestASlowWriteKeepsItsConnection(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	base := h.sibling(func(c *gateway.Config) { c.BodyTimeout = 100 * time.Millisecond }).base
	const account, resource = "acct-39", "account/acct-39"
	l := h.mustAcquire(resource, 30, 0)
	if r := h.write("credit", l.Token, debit(account, 1)); r.Status != http.StatusOK { // creates the fence row
		t.Fatalf("first write: %d %s", r.Status, r.Body)
	}
	before := h.balance(account)

	unblock := blockFence(t, h, resource)
	conn, rest := stalledWrite(t, base, l.Token, account, 5)
	if _, err := io.WriteString(conn, rest); err != nil {
		t.Fatal(err)
	}
	waitUntilBlocked(t, h)
	waitOrFail(t, "the write to wait in PostgreSQL past its body deadline", func() bool {
		var past bool
		_ = h.pool.QueryRow(t.Context(), `SELECT coalesce(bool_or(clock_timestamp() - query_start > interval '300 ms'), false)
			FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%fencegw.fence%'`).Scan(&past)
		return past
	})
	unblock()
	if status := readStatus(t, conn); status != http.StatusOK {
		t.Fatalf("a write slower than the body deadline: %d, want 200", status)
	}
	body := debit(account, 7)
	req := fmt.Sprintf("POST /v1/ops/credit HTTP/1.1\r\nHost: gw\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s",
		gateway.TokenHeader, l.Token, len(body), body)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	if status := readStatus(t, conn); status != http.StatusOK {
		t.Fatalf("the next write on the same connection: %d, want 200", status)
	}
	if got := h.balance(account); got != before+12 {
		t.Fatalf("balance %d, want %d", got, before+12)
	}
}

func metricsText(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRefusedBeforeTheBody: a write that will be refused whatever its body
// (no such operation, no credentials, no token) is answered at once, with
// its own refusal: not 413 for a body too large that it never had to
// send, and never "100 Continue" to a client that asked before sending.
func TestRefusedBeforeTheBody(t *testing.T) {
	h := newHarness(t, billingPolicy(t, "[debit, credit]"))
	auth := "Authorization: Bearer billing-secret\r\n"
	token := gateway.TokenHeader + ": 1:1\r\n"
	before := h.state()
	for _, c := range []struct {
		name, path, headers string
		status              int
	}{
		{"unknown operation", "/v1/ops/drop", auth + token, http.StatusNotFound},
		{"a path below an operation", "/v1/ops/debit/more", auth + token, http.StatusNotFound},
		{"no credentials", "/v1/ops/debit", token, http.StatusUnauthorized},
		{"no credentials for a batch", "/v1/batch", "", http.StatusUnauthorized},
		{"no token", "/v1/ops/debit", auth, http.StatusPreconditionRequired},
	} {
		for _, length := range []int{100, 10000000} { // within the limit, and past it
			conn, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n%sExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", c.path, c.headers, length)
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatal(err)
			}
			if status, body := readAnswer(t, conn); status != c.status {
				t.Errorf("%s, %d bytes announced: %d %s, want %d before any body was sent", c.name, length, status, body, c.status)
			}
			conn.Close()
		}
	}
	// Without Expect, a body too large is still refused as too large
	// when the write could otherwise go through.
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /v1/ops/debit HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"+auth+token+"Content-Length: 10000000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if status, body := readAnswer(t, conn); status != http.StatusRequestEntityTooLarge {
		t.Errorf("a known write with a body too large: %d %s, want 413", status, body)
	}
	if h.state() != before {
		t.Error("a refused write changed the database")
	}
}
