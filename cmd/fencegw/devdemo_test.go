package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// devAnswer is an answer of dev's gateway.
type devAnswer struct {
	Status int
	Body   string
}

// devCall sends body (JSON, "" for none) to u, with token as
// Fencing-Token when there is one.
func devCall(t *testing.T, method, u, token, body string) devAnswer {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Fencing-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return devAnswer{resp.StatusCode, string(b)}
}

// devLease is a lease answer of dev's gateway.
type devLease struct {
	LeaseID  string `json:"lease_id"`
	Resource string `json:"resource"`
	Token    string `json:"token"`
	Permit   int    `json:"permit"`
	Permits  int    `json:"permits"`
}

// acquireDev takes a lease through dev's gateway and fails the test
// unless it is granted.
func acquireDev(t *testing.T, base, body string) devLease {
	t.Helper()
	a := devCall(t, http.MethodPost, base+"/v1/leases", "", body)
	if a.Status != http.StatusCreated {
		t.Fatalf("lease %s: %d %s", body, a.Status, a.Body)
	}
	var l devLease
	if err := json.Unmarshal([]byte(a.Body), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// unsigned is a token's E:R(#k), as fences and observations show it.
func unsigned(t *testing.T, token string) string {
	t.Helper()
	tok, err := tokens.Parse(token)
	if err != nil {
		t.Fatal(err)
	}
	return tok.Unsigned().String()
}

// TestDevDemoShowsEveryFeature uses, through a running `fencegw dev`,
// each kind of thing its demo policy declares beyond the ledger's
// writes, as its cheat-sheet tells a person to.
func TestDevDemoShowsEveryFeature(t *testing.T) {
	t.Setenv("DATABASE_URL", testenv.NewDatabase(t))
	base, _, stop := startDev(t)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("dev after Ctrl-C: %v", err)
		}
	})

	t.Run("FencedReadAnswersWithItsFence", func(t *testing.T) {
		a := acquireDev(t, base, `{"resource": "account/acct-11", "ttl": 30}`)
		if w := devCall(t, http.MethodPost, base+"/v1/ops/debit", a.Token, `{"account": "acct-11", "amount_cents": 100}`); w.Status != http.StatusOK {
			t.Fatalf("debit: %d %s", w.Status, w.Body)
		}
		r := devCall(t, http.MethodPost, base+"/v1/reads/balance", a.Token, `{"account": "acct-11"}`)
		var read struct {
			Fence      string
			Statements []struct {
				Rows []struct {
					BalanceCents int `json:"balance_cents"`
				}
			}
		}
		if r.Status != http.StatusOK || json.Unmarshal([]byte(r.Body), &read) != nil {
			t.Fatalf("read balance: %d %s", r.Status, r.Body)
		}
		if want := unsigned(t, a.Token); read.Fence != want {
			t.Errorf("read's fence = %q, want the debit's token %s", read.Fence, want)
		}
		if len(read.Statements) != 1 || len(read.Statements[0].Rows) != 1 || read.Statements[0].Rows[0].BalanceCents != 900 {
			t.Errorf("read's rows: %s, want balance 900", r.Body)
		}

		devCall(t, http.MethodDelete, base+"/v1/leases/"+a.LeaseID, "", "")
		b := acquireDev(t, base, `{"resource": "account/acct-11", "ttl": 30}`)
		devCall(t, http.MethodPost, base+"/v1/ops/credit", b.Token, `{"account": "acct-11", "amount_cents": 100}`)
		if r := devCall(t, http.MethodPost, base+"/v1/reads/balance", a.Token, `{"account": "acct-11"}`); r.Status != http.StatusConflict || !strings.Contains(r.Body, "stale-token") {
			t.Errorf("a read with the superseded token: %d %s, want 409 stale-token", r.Status, r.Body)
		}
	})

	t.Run("SemaphoreGrantsItsPermits", func(t *testing.T) {
		for want := 1; want <= 2; want++ {
			l := acquireDev(t, base, `{"resource": "export/daily", "ttl": 30}`)
			if l.Permit != want || l.Permits != 2 || l.Resource != fmt.Sprintf("export/daily#%d", want) {
				t.Fatalf("permit %d: %+v, want permit %d of 2, slot export/daily#%d", want, l, want, want)
			}
			if w := devCall(t, http.MethodPost, base+"/v1/ops/export_batch", l.Token, `{"batch": "daily"}`); w.Status != http.StatusOK {
				t.Fatalf("export under permit %d: %d %s", want, w.Status, w.Body)
			}
		}
		if a := devCall(t, http.MethodPost, base+"/v1/leases", "", `{"resource": "export/daily", "ttl": 30}`); a.Status != http.StatusConflict || !strings.Contains(a.Body, "all 2 permits") {
			t.Fatalf("a third permit: %d %s, want 409: all 2 permits are held", a.Status, a.Body)
		}
	})

	t.Run("MaxHoldRevokesARenewedLease", func(t *testing.T) {
		if a := devCall(t, http.MethodPost, base+"/v1/leases", "", `{"resource": "settlement/2026-10-18", "ttl": 20}`); a.Status != http.StatusBadRequest || !strings.Contains(a.Body, "max_hold") {
			t.Fatalf("a TTL past max_hold: %d %s, want 400 naming max_hold", a.Status, a.Body)
		}
		l := acquireDev(t, base, `{"resource": "settlement/2026-10-18", "ttl": 2}`)
		if w := devCall(t, http.MethodPost, base+"/v1/ops/settle_day", l.Token, `{"day": "2026-10-18"}`); w.Status != http.StatusOK {
			t.Fatalf("settle: %d %s", w.Status, w.Body)
		}
		var last devAnswer
		if !testenv.WaitFor(time.Minute, func() bool {
			last = devCall(t, http.MethodPost, base+"/v1/leases/"+l.LeaseID+"/keepalive", "", "")
			return last.Status != http.StatusOK
		}) {
			t.Fatal("the settlement's lease was renewed past its max_hold")
		}
		if last.Status != http.StatusNotFound || !strings.Contains(last.Body, "max_hold") {
			t.Fatalf("a keepalive past max_hold: %d %s, want 404 saying why", last.Status, last.Body)
		}
	})

	t.Run("LockDelayFollowsAnExpiry", func(t *testing.T) {
		const resource = "payout/acct-12"
		l := acquireDev(t, base, `{"resource": "`+resource+`", "ttl": 1}`) // never renewed: it expires
		if w := devCall(t, http.MethodPost, base+"/v1/ops/pay_out", l.Token, `{"account": "acct-12"}`); w.Status != http.StatusOK {
			t.Fatalf("pay out: %d %s", w.Status, w.Body)
		}
		if !testenv.WaitFor(time.Minute, func() bool {
			return strings.Contains(devCall(t, http.MethodGet, base+"/v1/leases?resource="+url.QueryEscape(resource), "", "").Body, `"holder":null`)
		}) {
			t.Fatal("the payout's lease never expired")
		}
		if a := devCall(t, http.MethodPost, base+"/v1/leases", "", `{"resource": "`+resource+`", "ttl": 5}`); a.Status != http.StatusConflict || !strings.Contains(a.Body, "lock-delay") {
			t.Fatalf("a lease right after the expiry: %d %s, want 409 locked in lock-delay", a.Status, a.Body)
		}
	})
}
