package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/kek"
	"github.com/fencegw/fencegw/tokens"
)

// TestKeysThatDoNotOpen: signing keys in etcd that this replica cannot
// open — one sealed under a KEK another replica holds and it lacks, one
// that is no sealed key at all — are left out, each named in an error log
// with its ID, never a crash. Tokens of the keys it opens still write;
// a token it cannot verify (by the key it lacks, or forged) is answered
// 503 not-applied while such a key is in service, since it cannot tell
// them apart, and writes nothing; once the keys are gone it is 403 again.
func TestKeysThatDoNotOpen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, cli := testenv.PrivateEtcd(t)
	h := newHarnessOn(t, demoPolicy(t, "monotonic"), cli)
	var log testenv.Buffer
	h = h.sibling(func(c *gateway.Config) { c.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	mine := h.mustAcquire("account/acct-1", 60, 0)

	// Another replica holds a newer KEK too (a rotation this one missed)
	// and seals a new key under it, which signs at once.
	own, err := os.ReadFile(testenv.KEKFile(t))
	if err != nil {
		t.Fatal(err)
	}
	both, err := kek.Parse(append(own, kek.New()...))
	if err != nil {
		t.Fatal(err)
	}
	other := authority.NewEtcd(testenv.NewEtcdClient(t, cli.Endpoints()), both)
	lacked, err := other.RotateKey(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := other.Acquire(ctx, "account/acct-2", authority.AcquireOptions{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	broken := fmt.Sprintf("%020d", 7)
	if _, err := cli.Put(ctx, "/fencegw/token-keys/"+broken, `{"sealed": 12}`); err != nil {
		t.Fatal(err)
	}
	if err := h.node.Watchdog().Check(ctx); err != nil {
		t.Fatalf("the authority check with keys that do not open: %v", err)
	}
	for _, id := range []string{lacked, broken} {
		if !strings.Contains(log.String(), "does not open here") || !strings.Contains(log.String(), "key_id="+id) {
			t.Fatalf("no error log names key %s:\n%s", id, log.String())
		}
	}

	if r := h.write("debit", mine.Token, debit("acct-1", 100)); r.Status != http.StatusOK {
		t.Fatalf("a write with a token of a key that opens: %d %s", r.Status, r.Body)
	}
	forged, err := tokens.Parse(mine.Token)
	if err != nil {
		t.Fatal(err)
	}
	forged.Sig[0] ^= 1
	before := h.state()
	for what, tok := range map[string]string{"the key it lacks": theirs.Token.String(), "forged": forged.String()} {
		r := h.write("debit", tok, debit("acct-2", 100))
		if r.Status != http.StatusServiceUnavailable || r.Problem.Outcome != "not-applied" || !strings.Contains(r.Problem.Detail, "cannot tell the token from a forgery") {
			t.Fatalf("a token of %s: %d %s, want 503 not-applied: this replica cannot tell", what, r.Status, r.Body)
		}
	}
	if h.state() != before {
		t.Fatal("the writes answered 503 changed state")
	}

	if _, err := cli.Delete(ctx, "/fencegw/token-keys/"+lacked); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, "/fencegw/token-keys/"+broken); err != nil {
		t.Fatal(err)
	}
	if err := h.node.Watchdog().Check(ctx); err != nil || !strings.Contains(log.String(), "every signing key in etcd opens here") {
		t.Fatalf("the check once those keys are gone: %v\n%s", err, log.String())
	}
	if r := h.write("debit", forged.String(), debit("acct-2", 100)); r.Status != http.StatusForbidden {
		t.Fatalf("a forged token once every key opens: %d %s, want 403", r.Status, r.Body)
	}
}
