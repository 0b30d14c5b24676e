package authority_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/devserver/etcdserver"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// memoryRecords is a RecordStore in memory: the resource side's record
// of the authority, for a watchdog without PostgreSQL.
type memoryRecords struct {
	mu  sync.Mutex
	rec tokens.Record
}

func (m *memoryRecords) Load(context.Context) (tokens.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rec, nil
}

func (m *memoryRecords) Save(_ context.Context, rec tokens.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rec = rec
	return nil
}

func (m *memoryRecords) Start(_ context.Context, rec tokens.Record) error {
	return m.Save(context.Background(), rec)
}

// TestHolderViewAfterRestoreAndBump: etcd is replaced by a restored one
// (lower revision, another cluster), the watchdog halts, the operator
// bumps the epoch and the authority resumes at the restored etcd's
// revision. A lock then granted through this replica is a change this
// replica made and knows: the view must show it, or say it does not
// know. It must not answer "free" from the state of the etcd it no
// longer talks to.
func TestHolderViewAfterRestoreAndBump(t *testing.T) {
	ctx := t.Context()
	old, cli := testenv.PrivateEtcd(t)
	a := authority.NewEtcd(cli, testenv.KEK())
	records := &memoryRecords{rec: tokens.Record{Epoch: tokens.DefaultEpoch}}
	dog := authority.NewWatchdog(a, records, slog.New(slog.DiscardHandler))
	if err := dog.Check(ctx); err != nil {
		t.Fatalf("first check: %v", err)
	}
	v := a.ViewHolders()
	t.Cleanup(v.Stop)
	// Push the old etcd's revision well past what the restored one will
	// issue for the grant below.
	for i := range 30 {
		l := acquire(t, a, fmt.Sprintf("view/restore/warm-%d", i), 0)
		if err := a.Release(ctx, l.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	const res = "view/restore/target"
	if !testenv.WaitFor(30*time.Second, func() bool {
		_, held, known := v.Holder(res)
		return known && !held
	}) {
		t.Fatal("the view never followed the old etcd")
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

	if err := dog.Check(ctx); err == nil {
		t.Fatal("the watchdog did not halt on the restored etcd")
	}
	if _, err := authority.Bump(ctx, a, records); err != nil {
		t.Fatalf("bump: %v", err)
	}
	if err := dog.Check(ctx); err != nil {
		t.Fatalf("check after the bump: %v", err)
	}

	l := acquire(t, a, res, 0)
	t.Cleanup(func() { _ = a.Release(context.Background(), l.ID, "") })
	if tok, held, known := v.Holder(res); known && (!held || tok.Compare(l.Token) != 0) {
		t.Fatalf("just after %s was granted through this replica (newest revision %d), the view knew holder %v (held %v)",
			l.Token, a.NewestRevision(), tok, held)
	}
	if !testenv.WaitFor(30*time.Second, func() bool {
		tok, held, known := v.Holder(res)
		return known && held && tok.Compare(l.Token) == 0
	}) {
		t.Fatalf("the view never followed the restored etcd to holder %s", l.Token)
	}
}
