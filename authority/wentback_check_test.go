package authority_test

// A validation that reads etcd behind what this process saw halts the
// authority (wentback.go): what the watchdog's checks and a bump then
// make of that halt.

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/devserver/etcdserver"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// gatedRecords is memoryRecords whose Save, once armed, tells saving and
// waits for release: a watchdog's check stopped between its view of etcd
// and its Resume.
type gatedRecords struct {
	memoryRecords
	armed   bool
	saving  chan struct{}
	release chan struct{}
}

func (g *gatedRecords) Save(ctx context.Context, rec tokens.Record) error {
	if g.armed {
		g.armed = false
		close(g.saving)
		<-g.release
	}
	return g.memoryRecords.Save(ctx, rec)
}

// TestCheckLiftsTheHaltOfAValidation: a check reads its view of
// etcd; etcd is then replaced by one behind (a restore); a validation
// reads it and halts the authority (checkEpochRead); the check, which judged
// the etcd it read before the restore, then resumes the authority and
// lifts that halt. The authority is back in service against an etcd that
// went back in time, until the next check.
func TestCheckLiftsTheHaltOfAValidation(t *testing.T) {
	ctx := t.Context()
	old, cli := testenv.PrivateEtcd(t)
	granter := authority.NewEtcd(testenv.NewEtcdClient(t, old.Endpoints()), testenv.KEK())
	for range 20 {
		l := acquire(t, granter, "wentback-check/warm", 0)
		if err := granter.Release(ctx, l.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	a := authority.NewEtcd(cli, testenv.KEK())
	records := &gatedRecords{memoryRecords: memoryRecords{rec: tokens.Record{Epoch: tokens.DefaultEpoch}}}
	dog := authority.NewWatchdog(a, records, slog.New(slog.DiscardHandler))
	if err := dog.Check(ctx); err != nil {
		t.Fatalf("first check: %v", err)
	}
	early := acquire(t, granter, "wentback-check/early", 0)
	if err := a.Validate(ctx, "wentback-check/early", "", early.Token, tokens.ValidateFence); err != nil {
		t.Fatal(err)
	}
	held := acquire(t, granter, "wentback-check/held", 0) // above what a has seen

	records.armed, records.saving, records.release = true, make(chan struct{}), make(chan struct{})
	checked := make(chan error, 1)
	go func() { checked <- dog.Check(ctx) }()
	<-records.saving // the check has read the old etcd, judged it, and saves

	restored, err := etcdserver.Start(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = restored.Close() })
	cli.SetEndpoints(restored.Endpoints()...)
	_ = old.Close()

	if err := a.Validate(ctx, "wentback-check/held", "", held.Token, tokens.ValidateFence); !errors.Is(err, tokens.ErrHalted) {
		t.Fatalf("validation against the restored etcd: %v, want halted", err)
	}
	close(records.release)
	<-checked
	if a.Halted() == nil {
		t.Fatalf("a check whose view predates the restore lifted the halt a validation found: the authority is in service on an etcd that went back (newest revision seen %d)", a.NewestRevision())
	}
}

// TestNewEpochTokenBeforeTheCheckIsRechecked: etcd is restored and
// the epoch bumped before this replica's watchdog ran. The first token of
// the new epoch it meets used to be refused as of an epoch not its own
// (RejectedError, Issued), on which the gateway rechecks its authority
// at once (gateway/apply.go validateNow) and validates again; now the
// read of the restored etcd halts the authority instead (ErrHalted, no
// recheck), and every request is answered 503 until the next periodic
// check.
func TestNewEpochTokenBeforeTheCheckIsRechecked(t *testing.T) {
	ctx := t.Context()
	old, cli := testenv.PrivateEtcd(t)
	a := authority.NewEtcd(cli, testenv.KEK())
	records := &memoryRecords{rec: tokens.Record{Epoch: tokens.DefaultEpoch}}
	dog := authority.NewWatchdog(a, records, slog.New(slog.DiscardHandler))
	for range 20 {
		l := acquire(t, a, "wentback-check/warm", 0)
		if err := a.Release(ctx, l.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := dog.Check(ctx); err != nil {
		t.Fatalf("check before the restore: %v", err)
	}

	restored, err := etcdserver.Start(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = restored.Close() })
	cli.SetEndpoints(restored.Endpoints()...)
	_ = old.Close()
	// The operator restores and bumps, through another replica.
	other := authority.NewEtcd(testenv.NewEtcdClient(t, restored.Endpoints()), testenv.KEK())
	if _, err := authority.Bump(ctx, other, records); err != nil {
		t.Fatalf("bump: %v", err)
	}
	otherDog := authority.NewWatchdog(other, records, slog.New(slog.DiscardHandler))
	if err := otherDog.Check(ctx); err != nil {
		t.Fatalf("the other replica's check: %v", err)
	}
	l := acquire(t, other, "wentback-check/new-epoch", 0)
	if l.Token.Epoch <= a.Epoch() {
		t.Fatalf("token %s is not of a newer epoch than %d", l.Token, a.Epoch())
	}

	// What the gateway does (gateway/apply.go validateNow).
	err = a.Validate(ctx, "wentback-check/new-epoch", "", l.Token, tokens.ValidateFence)
	var rejected *tokens.RejectedError
	if errors.As(err, &rejected) && rejected.Issued && l.Token.Epoch > a.Epoch() && dog.Recheck(ctx) {
		err = a.Validate(ctx, "wentback-check/new-epoch", "", l.Token, tokens.ValidateFence)
	}
	if err != nil {
		t.Fatalf("a token of the new epoch at a replica its watchdog has not yet caught up: %v (halted: %v); want valid after the recheck", err, a.Halted())
	}
}
