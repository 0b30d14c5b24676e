package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// TestOperatorVerbsAndHistory: an operator's client advances a fence and
// revokes the holder's lease with fencegw fence advance and fencegw lease
// revoke (a dry run first, changing nothing), a client that is no
// operator's is refused, a missing --reason is refused before anything is
// sent, and fencegw inspect --history shows the grant, the advance and the
// revoke with who and why, as text and as one JSON document.
func TestOperatorVerbsAndHistory(t *testing.T) {
	const resource = "account/acct-29"
	demo, err := os.ReadFile("../../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sum := func(s string) string { b := sha256.Sum256([]byte(s)); return hex.EncodeToString(b[:]) }
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	withClients := string(demo) + "\nclients:\n  billing:\n    token_sha256: " + sum("billing-secret") + "\n    operations: [debit, credit]\n" +
		"  ops:\n    token_sha256: " + sum("ops-secret") + "\n    operations: [\"*\"]\n"
	if err := os.WriteFile(pol, []byte(withClients), 0o644); err != nil {
		t.Fatal(err)
	}
	dbURL := migrated(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs, served := make(chan string, 1), make(chan error, 1)
	go func() { served <- serve(ctx, serveConfigFor(t, dbURL, pol), func(a string) { addrs <- a }) }()
	defer func() { cancel(); <-served }()
	base := "http://" + <-addrs

	billing := client.New(base, client.WithBearerToken("billing-secret"))
	lease, err := billing.Acquire(ctx, resource, client.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(context.Background())
	if _, err := billing.Write(ctx, lease.Token(), "credit", map[string]any{"account": "acct-29", "amount_cents": 1}); err != nil {
		t.Fatal(err)
	}
	tok, err := tokens.Parse(lease.Token())
	if err != nil {
		t.Fatal(err)
	}
	plain := tok.Unsigned().String()
	run := func(secret string, args ...string) (string, error) {
		t.Setenv("FENCEGW_BEARER_TOKEN", secret)
		var out bytes.Buffer
		err := execute(ctx, &out, append(args, "--gateway", base)...)
		return out.String(), err
	}

	if _, err := run("ops-secret", "fence", "advance", resource); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--reason is required") {
		t.Errorf("advance without --reason: %v, want a usage error asking for it", err)
	}
	if _, err := run("billing-secret", "fence", "advance", resource, "--reason", "x"); err == nil || !strings.Contains(err.Error(), `operations ["*"]`) {
		t.Errorf("advance by a client that is no operator's: %v, want 403", err)
	}
	out, err := run("ops-secret", "fence", "advance", resource, "--reason", "x", "--dry-run", "--json")
	var adv client.FenceAdvance
	if err != nil || json.Unmarshal([]byte(out), &adv) != nil || !adv.Advanced || !adv.DryRun || adv.Holder != plain {
		t.Fatalf("advance --dry-run --json: %v\n%s", err, out)
	}
	if _, err := billing.Write(ctx, lease.Token(), "credit", map[string]any{"account": "acct-29", "amount_cents": 1}); err != nil {
		t.Fatalf("the holder's write after a dry run: %v", err)
	}
	if out, err := run("ops-secret", "fence", "advance", resource, "--reason", "bad holder"); err != nil || !strings.HasPrefix(out, "advanced the fence of "+resource) {
		t.Fatalf("advance: %v\n%s", err, out)
	}
	var problem *client.ProblemError
	if _, err := billing.Write(ctx, lease.Token(), "credit", map[string]any{"account": "acct-29", "amount_cents": 1}); !errors.As(err, &problem) || problem.Status != 409 {
		t.Fatalf("the holder's write after the advance: %v, want 409", err)
	}
	if out, err := run("ops-secret", "lease", "revoke", lease.ID(), "--reason", "x", "--dry-run"); err != nil || !strings.HasPrefix(out, "would revoke lease "+lease.ID()+" of client billing, holding "+resource) {
		t.Fatalf("revoke LEASE --dry-run: %v\n%s", err, out)
	}
	if out, err := run("ops-secret", "lease", "revoke", resource, "--reason", "wedged"); err != nil || !strings.Contains(out, "revoked lease "+lease.ID()) || !strings.Contains(out, "past the token") {
		t.Fatalf("revoke: %v\n%s", err, out)
	}
	if _, err := run("ops-secret", "lease", "revoke", resource, "--reason", "again"); err == nil || !strings.Contains(err.Error(), "no lock") {
		t.Errorf("revoke of a resource nobody holds: %v, want no-lock", err)
	}

	inspect := func(args ...string) string {
		var out bytes.Buffer
		args = append([]string{"inspect", "--history", resource, "--database-url", dbURL, "--etcd", strings.Join(testenv.EtcdEndpoints(), ",")}, args...)
		if err := execute(ctx, &out, args...); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	var v historyView
	if !testenv.WaitFor(60*time.Second, func() bool {
		v = historyView{}
		if json.Unmarshal([]byte(inspect("--json", "--since", "1h")), &v) != nil {
			return false
		}
		seen := map[string]bool{}
		for _, e := range v.History {
			seen[e.Event+" "+e.Actor+" "+e.Reason] = true
		}
		return seen["granted  "] && seen["fence-advanced ops bad holder"] && seen["revoked ops wedged"]
	}) {
		t.Fatalf("the history never showed the grant, the advance and the revoke: %+v", v.History)
	}
	for _, e := range v.History {
		if e.Event == fence.Granted && (e.Client != "billing" || e.Token != plain) {
			t.Errorf("grant recorded as %+v, want billing's with %s", e, plain)
		}
	}
	if text := inspect(); !strings.Contains(text, "revoked") || !strings.Contains(text, "wedged") || strings.Contains(text, lease.Token()) {
		t.Errorf("inspect --history text (no signed token in it):\n%s", text)
	}
	if err := execute(ctx, io.Discard, "inspect", "--database-url", dbURL, "--etcd", "127.0.0.1:1", "--since", "1h"); !errors.Is(err, errUsage) {
		t.Errorf("--since without --history: %v, want a usage error", err)
	}
}

// TestDescribeRevocation: the text line names what the lease held or
// waited for, and what became of a holder's fence; a contender in a
// semaphore's line has no token to show.
func TestDescribeRevocation(t *testing.T) {
	rev := func(token string, waiting, dryRun bool) *client.Revocation {
		r := &client.Revocation{Revoked: !dryRun, DryRun: dryRun}
		r.Lease.LeaseID, r.Lease.Resource, r.Lease.Token, r.Lease.Client, r.Lease.Waiting = "1a", "pool/p1", token, "ops", waiting
		return r
	}
	cut := func(r *client.Revocation, before, fence string, advanced bool) *client.Revocation {
		r.Fence = &struct {
			Before   string `json:"before"`
			Fence    string `json:"fence"`
			Advanced bool   `json:"advanced"`
		}{before, fence, advanced}
		return r
	}
	for _, tc := range []struct {
		r    *client.Revocation
		want string
	}{
		{cut(rev("1:9", false, false), "1:9", "1:10", true), "revoked lease 1a of client ops, holding pool/p1 with token 1:9; its fence advanced from 1:9 to 1:10: its next write is refused"},
		{cut(rev("1:9", false, true), "1:0", "1:10", true), "would revoke lease 1a of client ops, holding pool/p1 with token 1:9; would advance its fence from 1:0 to 1:10: its next write refused"},
		{cut(rev("1:9", false, false), "1:12", "1:12", false), "revoked lease 1a of client ops, holding pool/p1 with token 1:9; its fence is at 1:12 already, past the token"},
		{rev("1:9", false, false), "revoked lease 1a of client ops, holding pool/p1 with token 1:9; its fence is left as it is (--keep-fence): the token writes until the next holder has written"},
		{rev("1:9", true, true), "would revoke lease 1a of client ops, waiting for pool/p1 with token 1:9"},
		{rev("", true, false), "revoked lease 1a of client ops, waiting for a permit of pool/p1"},
	} {
		if got := describeRevocation(tc.r); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// TestDescribeAdvance: the text line of a fence advance reads right
// whatever waits: no lease, one, several; a dry run says what would be.
func TestDescribeAdvance(t *testing.T) {
	adv := func(holder string, waiting int64, dryRun bool) *client.FenceAdvance {
		return &client.FenceAdvance{Resource: "account/acct-1", Before: "1:9", Fence: "1:12", Advanced: true, Holder: holder, Waiting: waiting, DryRun: dryRun}
	}
	for _, tc := range []struct {
		name string
		adv  *client.FenceAdvance
		want string
	}{
		{"nobody waits", adv("1:9", 0, false), "advanced the fence of account/acct-1 from 1:9 to 1:12: the holder's token 1:9 is refused from its next write; no lease waits"},
		{"one waits", adv("1:9", 1, false), "advanced the fence of account/acct-1 from 1:9 to 1:12: the holder's token 1:9 is refused from its next write; the lease waiting writes once granted"},
		{"three wait", adv("", 3, false), "advanced the fence of account/acct-1 from 1:9 to 1:12: nobody holds the lock; the 3 leases waiting write once granted"},
		{"dry run", adv("1:9", 0, true), "would advance the fence of account/acct-1 from 1:9 to 1:12: the holder's token 1:9 would be refused from its next write; no lease waits"},
		{"past already", &client.FenceAdvance{Resource: "account/acct-1", Before: "1:12", Fence: "1:12"}, "the fence of account/acct-1 is at 1:12, past every token issued already: nothing changed"},
	} {
		if got := describeAdvance(tc.adv); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
