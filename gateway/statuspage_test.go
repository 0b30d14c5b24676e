package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testgw"
)

// screenshotEnv names a file the browser test writes a full-page PNG of the
// status page to (docs/status-page.png is made so).
const screenshotEnv = "FENCEGW_STATUS_SCREENSHOT"

// browserWait bounds each wait for something to show in the page: the
// page polls every 2 s, and a busy 2-core machine runs chromium slowly.
const browserWait = 60 * time.Second

// leaseTTL outlives the test's waits, so a slow run sees the same holders
// throughout.
const leaseTTL = 300

// TestStatusPageInABrowser opens /status in headless chromium and watches
// a stale write's refusal, the lock held and its waiter appear, the TTL
// tick, and hostile names stay text; the page follows the watch
// (statuslive_test.go); a gateway whose policy declares
// clients makes the page ask for a bearer token; one without PostgreSQL
// makes it say so and still show the locks.
func TestStatusPageInABrowser(t *testing.T) {
	browser := startBrowser(t)
	t.Run("refusals, locks and hostile names", func(t *testing.T) { testStatusPageShowsRefusals(t, browser) })
	t.Run("bearer token", func(t *testing.T) { testStatusPageAsksForToken(t, browser) })
	t.Run("PostgreSQL down", func(t *testing.T) { testStatusPageWithoutPostgres(t, browser) })
	t.Run("live from the watch", func(t *testing.T) { testStatusPageFollowsTheWatch(t, browser) })
}

func testStatusPageShowsRefusals(t *testing.T, browser context.Context) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	runStatusRates(t, h)
	runHistory(t, h.node)
	page := openTab(t, browser, h.base+"/status")
	page.waitFor("itself live", `document.getElementById("state").classList.contains("live")`)

	// A holder, its successor, a write of each: the older token's is refused.
	old := h.mustAcquire("account/acct-91", leaseTTL, 0)
	h.release(old)
	held := h.mustAcquire("account/acct-91", leaseTTL, 0)
	waiter := waitForLock(h, "account/acct-91")
	defer waiter.release(held) // held's lease, then the waiter's
	if r := h.write("debit", held.Token, debit("acct-91", 5)); r.Status != http.StatusOK {
		t.Fatalf("debit with the newer token: %d %s", r.Status, r.Body)
	}
	if r := h.write("debit", old.Token, debit("acct-91", 5)); r.Status != http.StatusConflict {
		t.Fatalf("debit with the older token: %d %s, want 409", r.Status, r.Body)
	}

	// Names and values clients chose, shaped as markup: shown as text.
	const hostile = `job/<script>window.pwned=1</script><img src=x onerror="window.pwned=2">`
	const hostileValue = `<b>bold</b><img src=x onerror="window.pwned=3">`
	const bypassWhy = `backfill for ticket OPS-12 <i>by hand</i>`
	defer h.release(acquireWithValue(t, h, hostile, hostileValue))
	if _, err := h.pool.Exec(context.Background(), "SELECT fencegw.bypass($1)", bypassWhy); err != nil {
		t.Fatal(err)
	}

	page.waitFor("the refusal in refused writes, and who", rowWith("rejections", map[string]string{
		"resource": "account/acct-91", "operation": "debit", "reason": "stale-token", "presented": old.Plain, "current": held.Plain,
		"client": "anonymous", "remote": "127.0.0.1", "refusals": "1",
	}))
	page.waitFor("the lock held, with its waiter", rowWith("locks", map[string]string{
		"resource": "account/acct-91", "holder": held.Plain, "waiters": "1", "client": "anonymous",
	}))
	page.waitFor("the first holder's release in the lock history", rowWith("history", map[string]string{
		"resource": "account/acct-91", "event": "released", "token": old.Plain,
	}))
	page.waitFor("the fence advanced", rowWith("fences", map[string]string{"resource": "account/acct-91", "token": held.Plain, "writes": "1"}))
	page.waitFor("the hostile lock, as text", rowWith("locks", map[string]string{"resource": hostile, "value": hostileValue}))
	page.waitFor("the bypass, as text", rowWith("bypasses", map[string]string{"why": bypassWhy}))
	if injected := evaluate[bool](page, `window.pwned !== undefined || document.querySelector("tbody script, tbody img, tbody b, tbody i") !== null`); injected {
		t.Fatal("text from etcd or PostgreSQL became markup in the page")
	}

	ttl := ttlOf(page, "account/acct-91")
	if ttl < 1 || ttl > leaseTTL {
		t.Fatalf("TTL shown %d s, want 1-%d (the lease's, counting down)", ttl, leaseTTL)
	}
	page.waitFor("the TTL ticking down", `parseInt(`+ttlCell("account/acct-91")+`.textContent) < `+strconv.Itoa(ttl))
	if now := ttlOf(page, "account/acct-91"); now >= ttl {
		t.Fatalf("TTL went from %d s to %d s, want it counting down", ttl, now)
	}

	page.waitFor("the chart's first interval", `document.querySelectorAll("#chart polyline.writes, #chart polyline.refusals").length === 2`)
	if path := os.Getenv(screenshotEnv); path != "" {
		screenshot(t, page, h, old, path)
	}
	page.noExceptions()
}

func testStatusPageAsksForToken(t *testing.T, browser context.Context) {
	h := newHarness(t, billingPolicy(t, `["*"]`))
	page := openTab(t, browser, h.base+"/status")
	page.waitFor("that it needs a token", `document.getElementById("follow-state").textContent.includes("answered 401") &&
		!document.getElementById("auth").hidden &&
		document.getElementById("auth-message").textContent.includes("401 Unauthorized") &&
		document.getElementById("board").hidden`)

	page.do(chromedp.SendKeys(chromedp.CSS("#auth-token"), "not-the-secret"), chromedp.Click(chromedp.CSS("#auth button")))
	page.waitFor("that the token was refused", `document.getElementById("auth-message").textContent.includes("refused this bearer token")`)

	page.do(chromedp.SendKeys(chromedp.CSS("#auth-token"), "billing-secret"), chromedp.Click(chromedp.CSS("#auth button")))
	page.waitFor("the status, with the token", `document.getElementById("state").classList.contains("live") &&
		document.getElementById("auth").hidden && !document.getElementById("board").hidden &&
		document.getElementById("source-postgres").textContent === "ok"`)
	if kept := evaluate[string](page, `sessionStorage.getItem("fencegw.status.bearer")`); kept != "billing-secret" {
		t.Fatalf("sessionStorage holds %q, want the token given", kept)
	}

	// Who holds a lock and who was refused: the client's name.
	billing := http.Header{"Authorization": {"Bearer billing-secret"}}
	r := h.do(http.MethodPost, "/v1/leases", billing, `{"resource": "account/acct-94", "ttl": 300}`)
	if r.Status != http.StatusCreated {
		t.Fatalf("lease as billing: %d %s", r.Status, r.Body)
	}
	var lease94 struct {
		Token string `json:"token"`
	}
	decodeJSON(t, r.Body, &lease94)
	billing.Set(gateway.TokenHeader, "1:1")
	if r = h.do(http.MethodPost, "/v1/ops/debit", billing, debit("acct-94", 1)); r.Status != http.StatusForbidden {
		t.Fatalf("a write with an unissued token: %d %s, want 403", r.Status, r.Body)
	}
	page.waitFor("the holder's client", rowWith("locks", map[string]string{"resource": "account/acct-94", "client": "billing"}))
	// The watch of every lock took the token too (in a header: the page
	// puts none in a URL), and drew the lock.
	page.waitFor("the lock drawn from the watch", `document.getElementById("locks").dataset.from === "watch" && `+
		watchedLock("account/acct-94", plain(t, lease94.Token)))
	page.waitFor("the refused client", rowWith("rejections", map[string]string{
		"resource": "account/acct-94", "reason": "token-rejected", "client": "billing", "remote": "127.0.0.1",
		"request": r.Header.Get(gateway.RequestIDHeader),
	}))
	page.noExceptions()
}

func testStatusPageWithoutPostgres(t *testing.T, browser context.Context) {
	_, base := gatewayOn(t, "postgres://postgres@127.0.0.1:1/none?sslmode=disable")
	page := openTab(t, browser, base+"/status")
	page.waitFor("PostgreSQL's lists as unavailable, etcd's shown", `
		["fences", "rejections", "bypasses", "history"].every((id) => {
			const down = document.querySelector("#" + id + " .unavailable");
			return !down.hidden && down.textContent.startsWith("PostgreSQL unavailable");
		}) &&
		document.querySelector("#locks .unavailable").hidden &&
		document.getElementById("source-postgres").className === "bad" &&
		document.getElementById("source-etcd").textContent === "ok"`)
	page.noExceptions()
}

// startBrowser starts headless chromium for the test, or fails it: a
// missing browser must not pass as a skip.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the status page is tested in chromium, which is not installed (%v): apt-get install chromium", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The browser lives as long as the context of its first action, so
	// that one has no deadline: the start is bounded from outside.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("starting %s: %v", path, err)
		}
	case <-time.After(browserWait):
		t.Fatalf("%s did not start within %s", path, browserWait)
	}
	return ctx
}

// browserTab is one tab of the test's browser, with the uncaught exceptions of its page.
type browserTab struct {
	t   *testing.T
	ctx context.Context

	mu         sync.Mutex
	exceptions []string
}

// openTab opens url in a new tab of browser, closed when the test ends.
func openTab(t *testing.T, browser context.Context, url string) *browserTab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	tb := &browserTab{t: t, ctx: ctx}
	thrown := chromedp.Events(ctx, runtime.ExceptionThrown)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range thrown {
			if err != nil {
				return
			}
			tb.mu.Lock()
			tb.exceptions = append(tb.exceptions, (&chromedp.ExceptionError{ExceptionDetails: ev.ExceptionDetails}).Error())
			tb.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	tb.do(chromedp.Navigate(url))
	return tb
}

// do runs actions in the tab, each wait bounded by browserWait.
func (tb *browserTab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("in the browser: %v (page says %q)", err, tb.state())
	}
}

// waitFor waits until the JavaScript predicate holds in the page.
func (tb *browserTab) waitFor(what, predicate string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, browserWait+5*time.Second)
	defer cancel()
	poll := chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(browserWait), chromedp.WithPollingInterval(50*time.Millisecond))
	if _, err := chromedp.Run(ctx, poll); err != nil {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		tb.t.Fatalf("the page never showed %s: %v (page says %q; exceptions: %q)", what, err, tb.state(), tb.exceptions)
	}
}

// state is the page's connection line, for failure messages.
func (tb *browserTab) state() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("state")?.textContent ?? "(no page)"`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return s
}

func (tb *browserTab) noExceptions() {
	tb.t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.exceptions) > 0 {
		tb.t.Fatalf("the page threw: %q", tb.exceptions)
	}
}

// evaluate returns the value of a JavaScript expression in the page.
func evaluate[T any](tb *browserTab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, browserWait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// rowWith is a predicate: section's table has a row whose cells of these
// classes hold exactly this text (textContent: what a person reads).
func rowWith(section string, cells map[string]string) string {
	want, _ := json.Marshal(cells) // a JSON object is a JavaScript literal
	return `[...document.querySelectorAll("#` + section + ` tbody tr")].some((tr) =>
		Object.entries(` + string(want) + `).every(([cls, text]) => tr.querySelector("td." + cls)?.textContent === text))`
}

// ttlCell is an expression for the TTL cell of resource's lock.
func ttlCell(resource string) string {
	r, _ := json.Marshal(resource)
	return `[...document.querySelectorAll("#locks tbody tr")].find((tr) => tr.querySelector("td.resource").textContent === ` + string(r) + `).querySelector("td.ttl")`
}

// ttlOf reads the seconds left the page shows for resource's lock.
func ttlOf(tb *browserTab, resource string) int {
	tb.t.Helper()
	text := evaluate[string](tb, ttlCell(resource)+`.textContent`)
	n, err := strconv.Atoi(strings.TrimSuffix(text, " s"))
	if err != nil {
		tb.t.Fatalf("TTL shown as %q, want seconds", text)
	}
	return n
}

// runStatusRates samples h's gateway's counters for the chart until the
// test ends.
func runStatusRates(t *testing.T, h *harness) {
	testgw.Run(t, func(ctx context.Context) { h.node.RunStatusRates(ctx, h.gw.WriteCounts) })
}

// acquireWithValue takes a lease on resource with value.
func acquireWithValue(t *testing.T, h *harness, resource, value string) lease {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"resource": resource, "ttl": leaseTTL, "value": value})
	r := h.do(http.MethodPost, "/v1/leases", nil, string(body))
	if r.Status != http.StatusCreated {
		t.Fatalf("acquire %q: %d %s", resource, r.Status, r.Body)
	}
	var l struct {
		ID string `json:"lease_id"`
	}
	decodeJSON(t, r.Body, &l)
	return lease{ID: l.ID, Resource: resource}
}

// lockWaiter is a client waiting in line for a lock.
type lockWaiter struct {
	h       *harness
	granted chan lease
}

// waitForLock starts a client waiting for resource's lock; the status page
// counts it as a waiter.
func waitForLock(h *harness, resource string) *lockWaiter {
	w := &lockWaiter{h: h, granted: make(chan lease, 1)}
	body, _ := json.Marshal(map[string]any{"resource": resource, "ttl": leaseTTL, "wait": 300})
	go func() {
		var l lease
		defer func() { w.granted <- l }()
		resp, err := http.Post(h.base+"/v1/leases", "application/json", strings.NewReader(string(body)))
		if err != nil {
			return
		}
		defer resp.Body.Close()
		var granted struct {
			ID string `json:"lease_id"`
		}
		if resp.StatusCode == http.StatusCreated && json.NewDecoder(resp.Body).Decode(&granted) == nil {
			l.ID = granted.ID
		}
	}()
	return w
}

// release lets the waiter in by releasing holder's lease, then releases
// the waiter's.
func (w *lockWaiter) release(holder lease) {
	w.h.release(holder)
	if l := <-w.granted; l.ID != "" {
		w.h.release(l)
	}
}

// screenshot writes the page as a full-page PNG to path, after a few
// intervals of writes to three more accounts and of stale writes with
// stale's token, so that the chart and the lists have something to show.
func screenshot(t *testing.T, tb *browserTab, h *harness, stale lease, path string) {
	var held []lease
	for _, account := range []string{"acct-92", "acct-93", "acct-94"} {
		l := h.mustAcquire("account/"+account, leaseTTL, 0)
		defer h.release(l)
		held = append(held, l)
	}
	const points = `document.querySelector("#chart polyline.writes").points.numberOfItems`
	for round := range 4 {
		before := evaluate[int](tb, points)
		for i := range 4 + 3*round {
			l := held[i%len(held)]
			account := strings.TrimPrefix(l.Resource, "account/")
			if r := h.write("credit", l.Token, debit(account, 7)); r.Status != http.StatusOK {
				t.Fatalf("credit %s: %d %s", account, r.Status, r.Body)
			}
		}
		for range round {
			if r := h.write("debit", stale.Token, debit("acct-91", 5)); r.Status != http.StatusConflict {
				t.Fatalf("stale debit: %d %s, want 409", r.Status, r.Body)
			}
		}
		tb.waitFor("the chart's next interval", points+` > `+strconv.Itoa(before))
	}
	tb.waitFor("the other locks", rowWith("locks", map[string]string{"resource": "account/acct-94"}))
	ctx, cancel := context.WithTimeout(tb.ctx, browserWait)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("status page screenshot: %s", path)
}
