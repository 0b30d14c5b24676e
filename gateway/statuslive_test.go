package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// testStatusPageFollowsTheWatch: the open page shows each grant, release,
// expiry and revocation as the watch reports it, without a reload;
// after its stream is cut it resumes with Last-Event-ID and shows what
// happened meanwhile as changes; resumed after a compaction, it re-reads
// the locks.
func testStatusPageFollowsTheWatch(t *testing.T, browser context.Context) {
	_, cli := testenv.PrivateEtcd(t) // compacted below: no other test's
	h := newHarnessOn(t, demoPolicy(t, "monotonic"), cli)
	front := newWatchGate(t, h.gw.Handler())
	page := openTab(t, browser, front.srv.URL+"/status")
	page.waitFor("the locks followed by watch", `document.getElementById("locks").dataset.from === "watch"`)
	if id := front.nextWatch(); id != "" {
		t.Fatalf("the page's first watch sent Last-Event-ID %q, want none", id)
	}
	page.do(chromedp.Evaluate[chromedp.Void](`window.sameDocument = true`)) // a reload would drop it
	change := func(event, resource, token string) string {
		return rowWith("changes", map[string]string{"event": event, "resource": resource, "token": token})
	}

	a := h.mustAcquire("account/acct-95", leaseTTL, 0)
	page.waitFor("the grant, drawn from the watch", watchedLock("account/acct-95", a.Plain))
	page.waitFor("the grant among the changes", rowWith("changes", map[string]string{"event": "granted", "resource": "account/acct-95", "token": a.Plain, "transitions": "1"}))
	h.release(a)
	page.waitFor("the released lock gone", noLock("account/acct-95"))
	page.waitFor("the release among the changes", change("released", "account/acct-95", a.Plain))

	b := h.mustAcquire("account/acct-96", 1, 0) // nobody renews it
	page.waitFor("the expiry among the changes", change("expired", "account/acct-96", b.Plain))
	page.waitFor("the expired lock gone", noLock("account/acct-96"))

	c := h.mustAcquire("account/acct-97", leaseTTL, 0)
	page.waitFor("the lock to revoke", watchedLock("account/acct-97", c.Plain))
	if r := h.do(http.MethodPost, "/v1/admin/leases/revoke", nil, `{"resource": "account/acct-97", "reason": "status page test"}`); r.Status != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	page.waitFor("the revocation among the changes", change("revoked", "account/acct-97", c.Plain))
	page.waitFor("the revoked lock gone", noLock("account/acct-97"))

	// Cut off, the page comes back after its last event: a grant made
	// meanwhile arrives as a change, which a fresh start (the state)
	// would not show.
	front.cut()
	if id := front.nextWatch(); id == "" {
		t.Fatal("the page came back without Last-Event-ID")
	}
	d := h.mustAcquire("account/acct-98", leaseTTL, 0)
	front.open()
	page.waitFor("the grant made while cut off, as a change", change("granted", "account/acct-98", d.Plain))
	page.waitFor("its lock", watchedLock("account/acct-98", d.Plain))

	// Cut off while etcd compacts past its last event: the gateway says
	// relist, and the page re-reads the locks.
	front.cut()
	if id := front.nextWatch(); id == "" {
		t.Fatal("the page came back without Last-Event-ID")
	}
	h.release(d)
	e := h.mustAcquire("account/acct-99", leaseTTL, 0)
	defer h.release(e)
	now, err := cli.Get(t.Context(), "compact")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(t.Context(), now.Header.Revision); err != nil {
		t.Fatal(err)
	}
	front.open()
	page.waitFor("the locks re-read after the compaction", watchedLock("account/acct-99", e.Plain)+" && "+noLock("account/acct-98")+
		` && document.getElementById("follow-state").textContent.startsWith("following")`)

	if !evaluate[bool](page, `window.sameDocument === true`) {
		t.Fatal("the page was reloaded")
	}
	page.noExceptions()
}

// watchedLock: the locks list has resource held by token, in a row the
// watch drew (the poll's rows carry no revision).
func watchedLock(resource, token string) string {
	r, _ := json.Marshal(resource)
	tok, _ := json.Marshal(token)
	return `[...document.querySelectorAll("#locks tbody tr")].some((tr) => tr.dataset.revision !== undefined &&
		tr.querySelector("td.resource").textContent === ` + string(r) + ` && tr.querySelector("td.holder").textContent === ` + string(tok) + `)`
}

// noLock: the locks list, drawn from the watch, does not have resource.
func noLock(resource string) string {
	r, _ := json.Marshal(resource)
	return `(document.getElementById("locks").dataset.from === "watch" &&
		![...document.querySelectorAll("#locks tbody tr")].some((tr) => tr.querySelector("td.resource").textContent === ` + string(r) + `))`
}

// watchGate serves a gateway's handler, and can cut its connections and
// hold the watches that come back until the test has changed something.
type watchGate struct {
	t       *testing.T
	srv     *httptest.Server
	watches chan string // each watch request's Last-Event-ID

	mu   sync.Mutex
	gate chan struct{} // closed: open
}

func newWatchGate(t *testing.T, next http.Handler) *watchGate {
	g := &watchGate{t: t, watches: make(chan string, 16), gate: make(chan struct{})}
	close(g.gate)
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/leases/watch") {
			g.watches <- r.Header.Get("Last-Event-ID")
			g.mu.Lock()
			gate := g.gate
			g.mu.Unlock()
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

// cut closes every connection, the page's watch stream among them, and
// holds the watches that follow until open.
func (g *watchGate) cut() {
	g.mu.Lock()
	g.gate = make(chan struct{})
	g.mu.Unlock()
	g.srv.CloseClientConnections()
}

func (g *watchGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.gate)
}

// nextWatch is the Last-Event-ID of the next watch request.
func (g *watchGate) nextWatch() string {
	g.t.Helper()
	select {
	case id := <-g.watches:
		return id
	case <-time.After(browserWait):
		g.t.Fatalf("no watch request within %s", browserWait)
	}
	return ""
}
