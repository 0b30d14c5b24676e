package authority

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/kek"
	"github.com/fencegw/fencegw/tokens"
)

// TestKeysRestSealed: the signing keys, in service and retired, are in
// etcd only sealed under the KEK: neither any value a client of etcd may
// read nor a snapshot of etcd (every revision of every key) holds a
// key's bytes, raw or encoded; an authority with another KEK, or none,
// cannot sign with them.
func TestKeysRestSealed(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := NewEtcd(cli, testenv.KEK())
	for range 2 {
		if _, err := a.RotateKey(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.RetireKeys(ctx, RetireOptions{Keep: 1}); err != nil {
		t.Fatal(err)
	}
	active, retired, err := a.readKeyKVs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(active) != 1 || len(retired) != 2 {
		t.Fatalf("%d keys in service and %d retired, want 1 and 2", len(active), len(retired))
	}
	var secrets [][]byte
	for prefix, kvs := range map[string][]*mvccpb.KeyValue{keysPrefix: active, retiredKeysPrefix: retired} {
		for _, kv := range kvs {
			var stored map[string]any
			if err := json.Unmarshal(kv.Value, &stored); err != nil || stored["secret"] != nil || stored["sealed"] == nil {
				t.Fatalf("%s holds %s, want a sealed key and no secret", kv.Key, kv.Value)
			}
			secret, _, err := openKey(testenv.KEK(), strings.TrimPrefix(string(kv.Key), prefix), kv.Value, false)
			if err != nil {
				t.Fatalf("%s: %v", kv.Key, err)
			}
			secrets = append(secrets, secret)
		}
	}

	all, err := cli.Get(ctx, "\x00", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	var everything bytes.Buffer
	for _, kv := range all.Kvs {
		everything.Write(kv.Key)
		everything.Write(kv.Value)
	}
	snapshot, err := cli.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db, err := io.ReadAll(snapshot)
	snapshot.Close()
	if err != nil {
		t.Fatal(err)
	}
	for where, data := range map[string][]byte{"the values a client reads": everything.Bytes(), "a snapshot": db} {
		for i, s := range secrets {
			for _, enc := range [][]byte{s, []byte(base64.StdEncoding.EncodeToString(s)), []byte(base64.RawURLEncoding.EncodeToString(s)), []byte(hex.EncodeToString(s))} {
				if bytes.Contains(data, enc) {
					t.Errorf("%s hold signing key %d's bytes", where, i)
				}
			}
		}
	}

	other, err := kek.Parse(kek.New())
	if err != nil {
		t.Fatal(err)
	}
	tok := tokens.Token{Epoch: 1, Revision: 10}
	for _, tc := range []struct {
		name string
		keks KEKs
		want error
	}{{"another KEK", other, ErrKeysSealed}, {"no KEK", nil, ErrNoKEK}} {
		if _, err := NewEtcd(cli, tc.keks).Sign(ctx, tok, "r", ""); !errors.Is(err, tc.want) {
			t.Errorf("an authority with %s signs: %v, want %v", tc.name, err, tc.want)
		}
	}
}
