package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/devserver/etcdserver"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// TestPruningAcrossAnEpochBump: etcd is restored from an old snapshot
// (another cluster counting from low revisions). While the authority is
// halted, pruning raises nothing. After the bump, the floor moves into the
// new epoch, below the live new-epoch lease: every row of the ended epoch
// goes, though its revisions are above the new ones, and the fence itself
// refuses an old-epoch token where its row was (the authority refuses it
// first; the floor holds without it). The live lease still writes.
func TestPruningAcrossAnEpochBump(t *testing.T) {
	ctx := context.Background()
	old, cli := testenv.PrivateEtcd(t)
	h := newHarnessOn(t, demoPolicy(t, "monotonic"), cli)
	h.recordEtcd()
	const account, resource = "acct-94", "account/acct-94"
	var last lease
	for range 8 { // revisions the restored etcd will be below
		last = h.mustAcquire(resource, 5, 0)
		h.release(last)
	}
	if r := h.write("debit", last.Token, debit(account, 1)); r.Status != http.StatusOK {
		t.Fatalf("write in epoch 1: %d %s", r.Status, r.Body)
	}
	h.recordEtcd()

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
	if _, err := h.node.PruneFences(ctx); !errors.Is(err, tokens.ErrHalted) {
		t.Fatalf("prune while halted = %v, want ErrHalted", err)
	}
	if floor, err := fence.Floor(ctx, h.pool); err != nil || floor.String() != "1:0" || h.fence(resource) != last.Plain {
		t.Fatalf("after a prune while halted: floor %s (%v), fence %s; want 1:0 and the row kept", floor, err, h.fence(resource))
	}

	if _, err := authority.Bump(ctx, h.auth, fence.Records{DB: h.pool}); err != nil {
		t.Fatal(err)
	}
	h.recordEtcd() // in service again, in epoch 2
	fresh := h.mustAcquire(resource, 30, 0)
	defer h.release(fresh)
	floor, pruned := h.prune()
	f := mustToken(t, floor)
	if f.Epoch != 2 || f.Compare(mustToken(t, fresh.Plain)) >= 0 || pruned != 1 || h.fence(resource) != "none" {
		t.Fatalf("floor %s, pruned %d, fence %s: want epoch 2 below the live %s, the epoch-1 row (%s) gone",
			floor, pruned, h.fence(resource), fresh.Plain, last.Plain)
	}
	old1 := mustToken(t, last.Plain)
	_, err = h.pool.Exec(ctx, "SELECT fencegw.fence($1, $2, $3, false)", resource, old1.Epoch, old1.Revision)
	if err == nil {
		t.Fatalf("the fence took epoch-1 token %s after its row was pruned", last.Plain)
	}
	if r := h.write("debit", fresh.Token, debit(account, 1)); r.Status != http.StatusOK {
		t.Fatalf("the live epoch-2 lease after pruning: %d %s", r.Status, r.Body)
	}
}
