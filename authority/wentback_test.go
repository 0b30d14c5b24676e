package authority_test

import (
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/devserver/etcdserver"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// TestValidationHaltsOnAnEtcdThatWentBack: etcd is replaced by one behind
// what a replica has seen (restored from an older snapshot) before the
// watchdog's next check. Another replica may already have applied a
// token that the restored etcd never issued, or whose lock key it does
// not hold: a refusal judged against it would be final for its client
// and contradict that replica. So a validation that reads etcd and finds
// it behind halts the authority and answers unavailable (ErrHalted),
// whether it asked about a revision this replica had not seen (validation
// fence and revision) or about the token's holder (validation holder).
func TestValidationHaltsOnAnEtcdThatWentBack(t *testing.T) {
	ctx := t.Context()
	old, cli := testenv.PrivateEtcd(t)
	granter := authority.NewEtcd(cli, testenv.KEK())
	const res = "wentback/one"
	for range 20 { // revisions the restored etcd will not have
		l := acquire(t, granter, "wentback/warm", 0)
		if err := granter.Release(ctx, l.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	early := acquire(t, granter, "wentback/early", 0)

	type judge struct {
		mode tokens.Validation
		cli  *clientv3.Client
		a    *authority.Etcd
	}
	var judges []*judge
	for _, mode := range []tokens.Validation{tokens.ValidateFence, tokens.ValidateRevision, tokens.ValidateHolder} {
		j := &judge{mode: mode, cli: testenv.NewEtcdClient(t, old.Endpoints())}
		j.a = authority.NewEtcd(j.cli, testenv.KEK())
		// Each has seen etcd up to early's revision, and loaded the keys.
		if err := j.a.Validate(ctx, "wentback/early", "", early.Token, tokens.ValidateFence); err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		judges = append(judges, j)
	}
	held := acquire(t, granter, res, 0)
	// The holder judge has seen the held token's revision too: its
	// question to etcd is who holds res.
	holderJudge := judges[2]
	if _, err := holderJudge.a.Revision(ctx); err != nil {
		t.Fatal(err)
	}
	for _, j := range judges[:2] {
		if j.a.NewestRevision() >= held.Token.Revision {
			t.Fatalf("%v: the judge has seen %d, not below the token's %d", j.mode, j.a.NewestRevision(), held.Token.Revision)
		}
	}

	restored, err := etcdserver.Start(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = restored.Close() })
	for _, j := range judges {
		j.cli.SetEndpoints(restored.Endpoints()...)
	}
	_ = old.Close()

	for _, j := range judges {
		err := j.a.Validate(ctx, res, "", held.Token, j.mode)
		if !errors.Is(err, tokens.ErrHalted) {
			t.Errorf("validation %v of %s against an etcd behind what the replica saw: %v, want the authority halted", j.mode, held.Token, err)
		}
		if j.a.Halted() == nil {
			t.Errorf("validation %v: the authority is still in service after meeting an etcd that went back", j.mode)
		}
	}
}
