package main

import (
	"net/http"
	"testing"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestDevUnsafeNoFence: dev takes serve's --unsafe-no-fence, and it
// reaches the gateway: a superseded holder's debit lands, where dev
// without it refuses that debit 409. The examples' controls rest on it.
func TestDevUnsafeNoFence(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
		want  int // the superseded holder's debit
	}{
		{"Fenced", nil, http.StatusConflict},
		{"UnsafeNoFence", []string{"--unsafe-no-fence"}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("DATABASE_URL", testenv.NewDatabase(t))
			base, dbURL, stop := startDev(t, tt.flags...)
			defer func() {
				if err := stop(); err != nil {
					t.Errorf("dev after Ctrl-C: %v", err)
				}
			}()
			const debit = `{"account": "acct-21", "amount_cents": 100}`
			a := acquireDev(t, base, `{"resource": "account/acct-21", "ttl": 30}`)
			devCall(t, http.MethodDelete, base+"/v1/leases/"+a.LeaseID, "", "")
			b := acquireDev(t, base, `{"resource": "account/acct-21", "ttl": 30}`)
			if w := devCall(t, http.MethodPost, base+"/v1/ops/debit", b.Token, debit); w.Status != http.StatusOK {
				t.Fatalf("the holder's debit: %d %s", w.Status, w.Body)
			}
			stale := devCall(t, http.MethodPost, base+"/v1/ops/debit", a.Token, debit)
			if stale.Status != tt.want {
				t.Fatalf("the superseded holder's debit: %d %s, want %d", stale.Status, stale.Body, tt.want)
			}
			wantBalance := 900
			if tt.want == http.StatusOK {
				wantBalance = 800
			}
			if got := balance(t, dbURL, "acct-21"); got != wantBalance {
				t.Errorf("balance = %d, want %d", got, wantBalance)
			}
		})
	}
}
