package authority_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/kek"
	"github.com/fencegw/fencegw/tokens"
)

// putClearKey stores key number n as fencegw did before keys were sealed:
// its bytes in clear.
func putClearKey(t *testing.T, cli *clientv3.Client, prefix string, n int) {
	t.Helper()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	value := fmt.Sprintf(`{"secret":%q,"created_at":"2025-01-02T03:04:05Z","sign_after":"0001-01-01T00:00:00Z"}`, base64.StdEncoding.EncodeToString(secret))
	if _, err := cli.Put(context.Background(), fmt.Sprintf("%s%020d", prefix, n), value); err != nil {
		t.Fatal(err)
	}
}

// rings returns KEK rings over a file of one KEK, of it and a newer one,
// and of the newer alone: a KEK rotation's three files.
func rings(t *testing.T) (old, both, newer *kek.Ring) {
	t.Helper()
	oldFile, newFile := kek.New(), kek.New()
	var err error
	if old, err = kek.Parse(oldFile); err == nil {
		if both, err = kek.Parse(append(append([]byte{}, oldFile...), newFile...)); err == nil {
			newer, err = kek.Parse(newFile)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return old, both, newer
}

// TestClearKeysMoveToSealed: keys stored in clear by an earlier fencegw
// are not used unless asked (ReadClearKeys, the move's flag), and the
// refusal says how to move; RewrapKeys seals each, in service and
// retired, without changing its bytes: a token signed before verifies
// after, with no clear key read. A second run finds nothing to do.
func TestClearKeysMoveToSealed(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	putClearKey(t, cli, "/fencegw/retired-token-keys/", 1)
	putClearKey(t, cli, "/fencegw/token-keys/", 2)
	ring := testenv.KEK()
	tok := tokens.Token{Epoch: tokens.DefaultEpoch, Revision: 1}

	strict := authority.NewEtcd(cli, ring)
	if _, err := strict.Sign(ctx, tok, "r", ""); !errors.Is(err, authority.ErrKeysSealed) || !strings.Contains(err.Error(), "fencegw keys rewrap") {
		t.Fatalf("signing with keys in clear, not asked to read them: %v, want ErrKeysSealed saying to rewrap", err)
	}
	moving := authority.NewEtcd(cli, ring)
	moving.ReadClearKeys()
	signed, err := moving.Sign(ctx, tok, "r", "")
	if err != nil {
		t.Fatalf("signing with keys in clear during the move: %v", err)
	}

	done, err := authority.NewEtcd(cli, ring).RewrapKeys(ctx)
	if err != nil || len(done) != 2 {
		t.Fatalf("RewrapKeys = %+v, %v; want both keys sealed", done, err)
	}
	for _, r := range done {
		if r.From != "" || r.To != ring.Newest() || r.Error != "" {
			t.Errorf("key %s: %+v, want sealed from clear under %s", r.ID, r, ring.Newest())
		}
	}
	resp, err := cli.Get(ctx, "/fencegw/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if strings.Contains(string(kv.Value), `"secret"`) {
			t.Errorf("%s still holds a key in clear: %s", kv.Key, kv.Value)
		}
	}
	after := authority.NewEtcd(cli, ring)
	if err := after.Validate(ctx, "r", "", signed, tokens.ValidateFence); err != nil {
		t.Fatalf("a token signed before the move, after it: %v", err)
	}
	again, err := after.RewrapKeys(ctx)
	if err != nil || len(again) != 2 || again[0].From != ring.Newest() || again[0].To != ring.Newest() {
		t.Fatalf("RewrapKeys again = %+v, %v; want nothing done", again, err)
	}
}

// TestKEKRotation: the runbook's steps. With the old KEK and a newer in
// the file, keys sealed under the old still open and new keys are sealed
// under the newer; RewrapKeys seals them all under the newer, after which
// the newer KEK alone opens every key and the tokens signed before still
// verify, while the old KEK alone opens none. A key no KEK of the file
// opens (here: a sealed key copied under another ID, which its seal
// does not allow) is left as it was and named, the others sealed all the
// same.
func TestKEKRotation(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old, both, newer := rings(t)
	first := authority.NewEtcd(cli, old)
	signed, err := first.Sign(ctx, tokens.Token{Epoch: tokens.DefaultEpoch, Revision: 1}, "r", "c")
	if err != nil {
		t.Fatal(err)
	}
	during := authority.NewEtcd(cli, both)
	if _, err := during.RotateKey(ctx, 0); err != nil {
		t.Fatalf("a rotation with both KEKs: %v", err)
	}
	keys, err := during.Keys(ctx)
	if err != nil || len(keys) != 2 || keys[0].SealedBy != both.Newest() || keys[1].SealedBy != old.Newest() {
		t.Fatalf("keys = %+v, %v; want the new key under the newer KEK, the first under the old", keys, err)
	}
	if _, err := during.RewrapKeys(ctx); err != nil {
		t.Fatal(err)
	}
	if keys, err = during.Keys(ctx); err != nil || keys[1].SealedBy != newer.Newest() {
		t.Fatalf("after RewrapKeys keys = %+v, %v; want all under the newer KEK", keys, err)
	}
	if err := authority.NewEtcd(cli, newer).Validate(ctx, "r", "c", signed, tokens.ValidateFence); err != nil {
		t.Fatalf("a token signed before the rotation, with the newer KEK alone: %v", err)
	}
	if _, err := authority.NewEtcd(cli, old).Sign(ctx, signed, "r", "c"); !errors.Is(err, authority.ErrKeysSealed) {
		t.Fatalf("the old KEK alone after the rotation: %v, want ErrKeysSealed", err)
	}

	stray, _, _ := rings(t)
	if _, err := authority.NewEtcd(cli, stray).RotateKey(ctx, 0); !errors.Is(err, authority.ErrKeysSealed) {
		t.Fatalf("a rotation with a KEK that opens no key: %v, want ErrKeysSealed", err)
	}
	strayKey := fmt.Sprintf("%020d", 9)
	moved, err := cli.Get(ctx, "/fencegw/token-keys/"+fmt.Sprintf("%020d", 2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/fencegw/token-keys/"+strayKey, string(moved.Kvs[0].Value)); err != nil {
		t.Fatal(err)
	}
	done, err := authority.NewEtcd(cli, newer).RewrapKeys(ctx)
	if !errors.Is(err, authority.ErrKeysSealed) || !strings.Contains(err.Error(), strayKey) || len(done) != 3 {
		t.Fatalf("RewrapKeys with a key copied under another ID = %+v, %v; want it named and left", done, err)
	}
}
