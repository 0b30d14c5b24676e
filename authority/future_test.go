package authority_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// TestTokensFromTheFutureAreForgeries: a token signed with a real key (one
// that leaked) whose revision is above any etcd has issued, or whose epoch
// is above etcd's, is refused as never issued in every validation mode;
// one of an epoch etcd has but this process has not caught up with is
// refused as issued (the gateway rechecks). A token at or below the
// newest revision this process has seen costs no etcd read: it validates
// with etcd stopped, where a token above it is answered unavailable.
func TestTokensFromTheFutureAreForgeries(t *testing.T) {
	ctx := t.Context()
	srv, cli := testenv.PrivateEtcd(t)
	a := authority.NewEtcd(cli, testenv.KEK())
	const res = "future/one"
	held := acquire(t, a, res, 0)

	// Another replica, which has seen nothing of etcd yet, validates the
	// holder's token with one read.
	other := authority.NewEtcd(testenv.NewEtcdClient(t, srv.Endpoints()), testenv.KEK())
	for _, mode := range []tokens.Validation{tokens.ValidateFence, tokens.ValidateHolder, tokens.ValidateRevision} {
		if err := other.Validate(ctx, res, "", held.Token, mode); err != nil {
			t.Fatalf("mode %v: the holder's token: %v", mode, err)
		}
	}

	forge := func(epoch, revision int64) tokens.Token {
		t.Helper()
		tok, err := a.Sign(ctx, tokens.Token{Epoch: epoch, Revision: revision}, res, "")
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	forged := map[string]tokens.Token{
		"a far-future revision":   forge(tokens.DefaultEpoch, 999_999_999),
		"the next revision":       forge(tokens.DefaultEpoch, other.NewestRevision()+1),
		"an epoch above etcd's":   forge(tokens.DefaultEpoch+1, held.Token.Revision),
		"a far-future epoch, too": forge(1<<40, 1<<40),
	}
	for name, tok := range forged {
		for _, mode := range []tokens.Validation{tokens.ValidateFence, tokens.ValidateHolder, tokens.ValidateRevision} {
			err := other.Validate(ctx, res, "", tok, mode)
			var rejected *tokens.RejectedError
			if !errors.As(err, &rejected) || rejected.Issued {
				t.Errorf("%s, mode %v: %v, want refused as never issued", name, mode, err)
			}
		}
	}

	// An epoch etcd has, which this process has not resumed into: issued,
	// as far as it can tell; not a forgery.
	if err := a.SetEpoch(ctx, tokens.DefaultEpoch+1); err != nil {
		t.Fatal(err)
	}
	err := other.Validate(ctx, res, "", forged["an epoch above etcd's"], tokens.ValidateFence)
	var rejected *tokens.RejectedError
	if !errors.As(err, &rejected) || !rejected.Issued {
		t.Errorf("a token of etcd's newer epoch: %v, want refused as issued (not current here)", err)
	}

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []tokens.Validation{tokens.ValidateFence, tokens.ValidateRevision} {
		if err := other.Validate(ctx, res, "", held.Token, mode); err != nil {
			t.Errorf("mode %v, etcd stopped: the holder's token: %v, want valid without a read", mode, err)
		}
		start := time.Now()
		if err := other.Validate(ctx, res, "", forged["a far-future revision"], mode); !errors.Is(err, authority.ErrUnavailable) {
			t.Errorf("mode %v, etcd stopped: a far-future token: %v (after %v), want unavailable: only etcd can say", mode, err, time.Since(start))
		}
	}
}
