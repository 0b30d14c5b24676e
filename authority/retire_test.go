package authority_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/devserver/etcdserver"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// TestRetireKeepsKeysOfLiveLeases: right after a rotation, retire keeps
// the old key while a lease granted under it lives (naming the lease), a
// dry run says what would go and retires nothing, and a keepalive signs
// the lease's token again with the new key. Once the lease has ended the
// old key goes, and a token it signed is refused as a retired key's.
func TestRetireKeepsKeysOfLiveLeases(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t) // retiring keys would refuse other tests' tokens
	a := authority.NewEtcd(cli, testenv.KEK())
	ctx := t.Context()
	old := acquire(t, a, "retire/one", 0)
	if _, err := a.RotateKey(ctx, 0); err != nil {
		t.Fatal(err)
	}
	keys, err := a.Keys(ctx)
	if err != nil || len(keys) != 2 {
		t.Fatalf("Keys = %+v, %v", keys, err)
	}
	oldKey := keys[1].ID

	plan, err := a.RetireKeys(ctx, authority.RetireOptions{Keep: 1, DryRun: true})
	if err != nil || len(plan) != 1 || plan[0].Retired || plan[0].LiveLeases != 1 || plan[0].Leases[0].ID != old.ID.String() ||
		plan[0].Leases[0].Resource != "retire/one" || plan[0].Leases[0].SignedBy != oldKey || plan[0].Leases[0].TTLSeconds <= 0 {
		t.Fatalf("dry run = %+v, %v; want the old key kept for the live lease, named with its TTL", plan, err)
	}
	plan, err = a.RetireKeys(ctx, authority.RetireOptions{Keep: 1, Force: true, DryRun: true})
	if err != nil || len(plan) != 1 || !plan[0].Retired || plan[0].LiveLeases != 1 {
		t.Fatalf("forced dry run = %+v, %v; want the old key to go, naming the lease", plan, err)
	}
	plan, err = a.RetireKeys(ctx, authority.RetireOptions{Keep: 1})
	if !errors.Is(err, authority.ErrKeyInUse) || len(plan) != 1 || plan[0].Retired {
		t.Fatalf("retire with a live lease of the old key = %+v, %v; want it kept, ErrKeyInUse", plan, err)
	}
	if keys, err := a.Keys(ctx); err != nil || len(keys) != 2 {
		t.Fatalf("after the refused retire and the dry runs: %+v, %v; want both keys in service", keys, err)
	}
	if err := a.Validate(ctx, "retire/one", "", old.Token, tokens.ValidateFence); err != nil {
		t.Fatalf("the live lease's token after the refused retire: %v", err)
	}

	renewal, err := a.KeepAlive(ctx, old.ID, "")
	if err != nil || renewal.Token.Unsigned() != old.Token.Unsigned() || renewal.Token == old.Token {
		t.Fatalf("keepalive after the rotation = %+v, %v; want %s signed again by the new key", renewal, err, old.Token.Unsigned())
	}
	newer := acquire(t, a, "retire/two", 0) // granted under the new key: holds nothing back
	if err := a.Release(ctx, old.ID, ""); err != nil {
		t.Fatal(err)
	}
	plan, err = a.RetireKeys(ctx, authority.RetireOptions{Keep: 1})
	if err != nil || len(plan) != 1 || !plan[0].Retired || plan[0].ID != oldKey {
		t.Fatalf("retire once the lease ended = %+v, %v; want the old key retired", plan, err)
	}
	var rej *tokens.RejectedError
	if err := a.Validate(ctx, "retire/one", "", old.Token, tokens.ValidateFence); !errors.As(err, &rej) || !rej.Retired {
		t.Fatalf("the old key's token = %v, want refused as a retired key's", err)
	}
	for _, tok := range []tokens.Token{renewal.Token, newer.Token} {
		res := map[tokens.Token]string{renewal.Token: "retire/one", newer.Token: "retire/two"}[tok]
		if err := a.Validate(ctx, res, "", tok, tokens.ValidateFence); err != nil {
			t.Fatalf("a token of the new key after the retire: %v", err)
		}
	}
	if retired, err := a.RetiredKeys(ctx); err != nil || len(retired) != 1 || retired[0].ID != oldKey || retired[0].RetiredAt.IsZero() {
		t.Fatalf("RetiredKeys = %+v, %v", retired, err)
	}
}

// TestGrantUnderARetiredKeyIsSignedAgain: a replica whose keys are out of
// date means to sign a grant with a key retired since; the grant's own
// transaction sees the key gone, so the token it hands out is signed by
// the key in service, and the record names that one.
func TestGrantUnderARetiredKeyIsSignedAgain(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	a, stale := authority.NewEtcd(cli, testenv.KEK()), authority.NewEtcd(cli, testenv.KEK())
	if _, err := stale.ReloadKeys(t.Context()); err != nil { // the first key only
		t.Fatal(err)
	}
	if _, err := a.RotateKey(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if plan, err := a.RetireKeys(t.Context(), authority.RetireOptions{Keep: 1}); err != nil || len(plan) != 1 || !plan[0].Retired {
		t.Fatalf("RetireKeys = %+v, %v", plan, err)
	}
	l := acquire(t, stale, "retire/stale", 0)
	if err := a.Validate(t.Context(), "retire/stale", "", l.Token, tokens.ValidateFence); err != nil {
		t.Fatalf("a grant by a replica whose keys were out of date: %v, want its token signed by the key in service", err)
	}
	// Its record names the key in service: nothing is held back.
	if _, err := a.RotateKey(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	plan, err := a.RetireKeys(t.Context(), authority.RetireOptions{Keep: 1, DryRun: true})
	if err != nil || len(plan) != 1 || plan[0].Retired || plan[0].LiveLeases != 1 || plan[0].Leases[0].ID != l.ID.String() {
		t.Fatalf("dry run = %+v, %v; want the key that signed the grant kept for it", plan, err)
	}
}

// TestUnknownKeyWithEtcdAwayIsUnavailable: a replica meets a token signed
// by a key it has not loaded while etcd is unreachable. Only etcd can say
// whether the key exists, so the answer is unavailable, never a refusal,
// however often it is asked (a reload skipped for the rate limit
// included); once etcd is back the token is accepted.
func TestUnknownKeyWithEtcdAwayIsUnavailable(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	srv, err := etcdserver.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cli := testenv.NewEtcdClient(t, srv.Endpoints())
	a, replica := authority.NewEtcd(cli, testenv.KEK()), authority.NewEtcd(cli, testenv.KEK())
	if _, err := replica.ReloadKeys(ctx); err != nil { // the first key only
		t.Fatal(err)
	}
	if _, err := a.RotateKey(ctx, 0); err != nil {
		t.Fatal(err)
	}
	l := acquire(t, a, "away/one", 0)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // the second and third within the reload's rate limit
		vctx, cancel := context.WithTimeout(ctx, time.Second) // a failed read takes as long as it is given
		err := replica.Validate(vctx, "away/one", "", l.Token, tokens.ValidateFence)
		cancel()
		if !errors.Is(err, authority.ErrUnavailable) || errors.Is(err, tokens.ErrRejected) {
			t.Fatalf("validation %d with etcd away = %v, want unavailable, not rejected", i+1, err)
		}
	}
	if srv, err = etcdserver.Start(ctx, dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cli.SetEndpoints(srv.Endpoints()...)
	if !testenv.WaitFor(time.Minute, func() bool {
		return replica.Validate(ctx, "away/one", "", l.Token, tokens.ValidateFence) == nil
	}) {
		t.Fatalf("the token once etcd is back: %v", replica.Validate(ctx, "away/one", "", l.Token, tokens.ValidateFence))
	}
}
