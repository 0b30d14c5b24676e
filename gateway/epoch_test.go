package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/devserver/etcdserver"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// TestEtcdRollbackHaltsUntilEpochBump replaces the gateway's etcd with a
// fresh one (lower revision, another cluster: what a restore from an old
// snapshot looks like). The gateway must halt — not ready, writes and
// leases refused with the fix named — until `fencegw epoch bump`; after
// it, tokens of the old epoch are refused and new ones write.
func TestEtcdRollbackHaltsUntilEpochBump(t *testing.T) {
	ctx := context.Background()
	old, cli := testenv.PrivateEtcd(t)
	h := newHarnessOn(t, demoPolicy(t, "monotonic"), cli)
	if err := h.node.Watchdog().Check(ctx); err != nil {
		t.Fatalf("first check: %v", err)
	}

	const account, resource = "acct-95", "account/acct-95"
	var last lease
	for range 5 {
		last = h.mustAcquire(resource, 5, 0)
		h.release(last)
	}
	if r := h.write("debit", last.Token, debit(account, 100)); r.Status != http.StatusOK {
		t.Fatalf("write before the restore: %d %s", r.Status, r.Body)
	}
	if err := h.node.Watchdog().Check(ctx); err != nil {
		t.Fatalf("check before the restore: %v", err)
	}

	restored, err := etcdserver.Start(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	cli.SetEndpoints(restored.Endpoints()...)
	old.Close()

	if err := h.node.Watchdog().Check(ctx); !errors.Is(err, tokens.ErrHalted) {
		t.Fatalf("check after the restore = %v, want ErrHalted", err)
	}
	if r := h.do(http.MethodGet, "/readyz", nil, ""); r.Status != http.StatusServiceUnavailable || !strings.Contains(string(r.Body), "epoch bump") {
		t.Fatalf("readyz while halted: %d %s, want 503 naming the fix", r.Status, r.Body)
	}
	before := h.state()
	r := h.write("debit", last.Token, debit(account, 100))
	if r.Status != http.StatusServiceUnavailable || r.Problem.Kind() != "authority-halted" || !strings.Contains(r.Problem.Detail, "fencegw epoch bump") {
		t.Fatalf("write while halted: %d %s, want 503 authority-halted naming the fix", r.Status, r.Body)
	}
	if after := h.state(); after != before {
		t.Fatal("a write while halted changed state")
	}
	if _, r := h.acquire(resource, 5, 0); r.Status != http.StatusServiceUnavailable || r.Problem.Kind() != "authority-halted" {
		t.Fatalf("lease while halted: %d %s", r.Status, r.Body)
	}

	epoch, err := authority.Bump(ctx, h.auth, fence.Records{DB: h.pool})
	if err != nil || epoch != 2 {
		t.Fatalf("BumpEpoch = %d, %v; want 2", epoch, err)
	}
	if err := h.node.Watchdog().Check(ctx); err != nil {
		t.Fatalf("check after the bump: %v", err)
	}
	if r := h.do(http.MethodGet, "/readyz", nil, ""); r.Status != http.StatusOK {
		t.Fatalf("readyz after the bump: %d %s", r.Status, r.Body)
	}
	if r := h.write("debit", last.Token, debit(account, 100)); r.Status != http.StatusForbidden || r.Problem.Kind() != "token-rejected" {
		t.Fatalf("old-epoch token after the bump: %d %s, want 403 token-rejected", r.Status, r.Body)
	}
	fresh := h.mustAcquire(resource, 5, 0)
	defer h.release(fresh)
	if tok := mustToken(t, fresh.Token); tok.Epoch != 2 || tok.Revision >= mustToken(t, last.Token).Revision {
		t.Fatalf("new token %s: want epoch 2 with a revision below the old %s (the restored etcd counts from low)", fresh.Token, last.Token)
	}
	if r := h.write("debit", fresh.Token, debit(account, 100)); r.Status != http.StatusOK {
		t.Fatalf("new-epoch write: %d %s", r.Status, r.Body)
	}
	if got := h.fence(resource); got != fresh.Plain {
		t.Fatalf("fence = %s, want %s", got, fresh.Token)
	}
}

// TestNoFalseHaltUnderTraffic: lock traffic racing the authority check must
// never look like etcd going back in time.
func TestNoFalseHaltUnderTraffic(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			l, err := h.auth.Acquire(ctx, "traffic/one", authority.AcquireOptions{TTL: 5 * time.Second})
			if err == nil {
				h.auth.Release(context.Background(), l.ID, "")
			}
		}
	}()
	defer func() { cancel(); <-done }()
	for i := range 200 {
		if err := h.node.Watchdog().Check(t.Context()); err != nil {
			t.Fatalf("check %d under traffic: %v", i, err)
		}
	}
}

// TestNewEpochBeforeTheGuardNotices: after an epoch bump made elsewhere (an
// operator, another replica), a lease carries the new epoch at once; the
// gateway, whose guard has not looked yet, checks the authority on the spot
// instead of refusing the token as one of an unknown epoch. A forged epoch
// is still refused.
func TestNewEpochBeforeTheGuardNotices(t *testing.T) {
	ctx := context.Background()
	_, cli := testenv.PrivateEtcd(t) // the epoch key is global
	h := newHarnessOn(t, demoPolicy(t, "monotonic"), cli)
	if err := h.node.Watchdog().Check(ctx); err != nil {
		t.Fatalf("first check: %v", err)
	}
	const account, resource = "acct-96", "account/acct-96"
	old := h.mustAcquire(resource, 5, 0)
	h.release(old)

	if epoch, err := authority.Bump(ctx, authority.NewEtcd(cli, testenv.KEK()), fence.Records{DB: h.pool}); err != nil || epoch != 2 {
		t.Fatalf("BumpEpoch elsewhere = %d, %v; want 2", epoch, err)
	}
	if got := h.auth.Epoch(); got != 1 {
		t.Fatalf("the gateway's authority already at epoch %d", got)
	}
	fresh := h.mustAcquire(resource, 5, 0)
	defer h.release(fresh)
	if tok := mustToken(t, fresh.Token); tok.Epoch != 2 {
		t.Fatalf("lease after the bump: token %s, want epoch 2", fresh.Token)
	}
	if r := h.write("credit", fresh.Token, debit(account, 7)); r.Status != http.StatusOK {
		t.Fatalf("new-epoch write before the guard's check: %d %s, want 200", r.Status, r.Body)
	}
	before := h.state()
	for _, tok := range []string{old.Token, "9:1"} {
		if r := h.write("credit", tok, debit(account, 7)); r.Status != http.StatusForbidden || r.Problem.Kind() != "token-rejected" {
			t.Fatalf("token %s after the bump: %d %s, want 403 token-rejected", tok, r.Status, r.Body)
		}
	}
	if after := h.state(); after != before {
		t.Fatal("a refused token changed state")
	}
}

// TestWipedEtcdHaltsEvenPastTheRevision: an etcd rebuilt with a wiped data
// directory and the same flags keeps its cluster ID, and may already be
// past the revision PostgreSQL recorded; only fencegw's identity key is
// gone. Deleting that key, then moving the revision well past the record,
// stands in for it: the gateway halts, and an epoch bump takes the new
// identity.
func TestWipedEtcdHaltsEvenPastTheRevision(t *testing.T) {
	ctx := context.Background()
	_, cli := testenv.PrivateEtcd(t) // the identity key is global
	h := newHarnessOn(t, demoPolicy(t, "monotonic"), cli)
	if err := h.node.Watchdog().Check(ctx); err != nil {
		t.Fatalf("first check: %v", err)
	}
	recorded, err := fence.Records{DB: h.pool}.Load(ctx)
	if err != nil || recorded.Identity == "" {
		t.Fatalf("record after the first check: %+v, %v; want an identity", recorded, err)
	}
	if _, err := cli.Delete(ctx, "/fencegw/identity"); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := cli.Put(ctx, "/elsewhere", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	err = h.node.Watchdog().Check(ctx)
	if !errors.Is(err, tokens.ErrHalted) || !strings.Contains(err.Error(), "identity changed") {
		t.Fatalf("check after the wipe = %v, want ErrHalted naming the identity", err)
	}
	if r := h.do(http.MethodGet, "/readyz", nil, ""); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("readyz while halted: %d %s, want 503", r.Status, r.Body)
	}
	if _, r := h.acquire("account/acct-97", 5, 0); r.Status != http.StatusServiceUnavailable || r.Problem.Kind() != "authority-halted" {
		t.Fatalf("lease while halted: %d %s", r.Status, r.Body)
	}
	if _, err := authority.Bump(ctx, h.auth, fence.Records{DB: h.pool}); err != nil {
		t.Fatal(err)
	}
	if err := h.node.Watchdog().Check(ctx); err != nil {
		t.Fatalf("check after the bump: %v", err)
	}
	now, err := fence.Records{DB: h.pool}.Load(ctx)
	if err != nil || now.Identity == "" || now.Identity == recorded.Identity {
		t.Fatalf("record after the bump: %+v, %v; want the new identity", now, err)
	}
}

// TestForeignAuthorityKeysHalt: an epoch or identity key in etcd holding
// what fencegw never writes there stops the authority (a gateway that
// cannot read them cannot tell a rollback either), and an epoch bump,
// the operator's word that etcd is to be trusted, replaces them.
func TestForeignAuthorityKeysHalt(t *testing.T) {
	ctx := context.Background()
	_, cli := testenv.PrivateEtcd(t) // the keys are global
	h := newHarnessOn(t, demoPolicy(t, "monotonic"), cli)
	if err := h.node.Watchdog().Check(ctx); err != nil {
		t.Fatalf("first check: %v", err)
	}
	for _, key := range []string{"/fencegw/identity", "/fencegw/epoch"} {
		if _, err := cli.Put(ctx, key, "garbage"); err != nil {
			t.Fatal(err)
		}
		err := h.node.Watchdog().Check(ctx)
		if !errors.Is(err, tokens.ErrHalted) || !strings.Contains(err.Error(), key) {
			t.Fatalf("check with %s = garbage: %v, want ErrHalted naming the key", key, err)
		}
		if r := h.do(http.MethodGet, "/readyz", nil, ""); r.Status != http.StatusServiceUnavailable {
			t.Fatalf("readyz with %s = garbage: %d %s, want 503", key, r.Status, r.Body)
		}
		if _, r := h.acquire("account/acct-98", 5, 0); r.Status != http.StatusServiceUnavailable || r.Problem.Kind() != "authority-halted" {
			t.Fatalf("lease with %s = garbage: %d %s", key, r.Status, r.Body)
		}
		if _, err := authority.Bump(ctx, h.auth, fence.Records{DB: h.pool}); err != nil {
			t.Fatalf("bump with %s = garbage: %v", key, err)
		}
		if err := h.node.Watchdog().Check(ctx); err != nil {
			t.Fatalf("check after the bump: %v", err)
		}
		l := h.mustAcquire("account/acct-98", 5, 0)
		if r := h.write("credit", l.Token, debit("acct-98", 1)); r.Status != http.StatusOK {
			t.Fatalf("a write after the bump: %d %s", r.Status, r.Body)
		}
		h.release(l)
	}
}
