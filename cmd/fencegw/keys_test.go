package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// keysDocOf runs `fencegw keys --json args...` against etcd and decodes
// its one document; stdout must hold nothing else.
func keysDocOf(t *testing.T, etcd string, args ...string) (keysDoc, error) {
	t.Helper()
	var out bytes.Buffer
	err := execute(t.Context(), &out, append([]string{"keys", "--etcd", etcd, "--json"}, args...)...)
	var doc keysDoc
	dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
	if derr := dec.Decode(&doc); derr != nil {
		t.Fatalf("keys %v --json: %v (command: %v)\n%s", args, derr, err, out.Bytes())
	}
	if _, derr := dec.Token(); derr != io.EOF {
		t.Fatalf("keys %v --json printed more than one document:\n%s", args, out.Bytes())
	}
	if strings.Contains(out.String(), "secret") {
		t.Fatalf("keys %v shows key material: %s", args, out.Bytes())
	}
	return doc, err
}

// TestKeysCommand: list on a new cluster lists nothing, says how keys come
// to be, and writes nothing (issue 34: it created the first key); rotate
// creates the first, then adds one that signs later; retire keeps the key that signs now, whatever --keep says; --json
// is one document of IDs, never the keys' bytes.
func TestKeysCommand(t *testing.T) {
	srv, _ := testenv.PrivateEtcd(t) // retiring keys would refuse other tests' tokens
	etcd := strings.Join(srv.Endpoints(), ",")
	list := func(args ...string) []authority.KeyInfo {
		t.Helper()
		doc, err := keysDocOf(t, etcd, args...)
		if err != nil {
			t.Fatalf("keys %v: %v", args, err)
		}
		return doc.Keys
	}
	cli := testenv.NewEtcdClient(t, srv.Endpoints())
	revision := func() int64 {
		t.Helper()
		resp, err := cli.Get(t.Context(), "/fencegw/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	before := revision()
	if keys := list("list"); len(keys) != 0 {
		t.Fatalf("list on a new cluster = %+v, want none", keys)
	}
	var empty bytes.Buffer
	if err := execute(t.Context(), &empty, "keys", "--etcd", etcd, "list"); err != nil || !strings.Contains(empty.String(), "no signing keys yet") {
		t.Errorf("keys list on a new cluster said %q (%v), want how keys come to be", empty.String(), err)
	}
	if after := revision(); after != before {
		t.Fatalf("keys list wrote to etcd: revision %d -> %d", before, after)
	}
	if keys := list("--sign-after", "0s", "rotate"); len(keys) != 2 || !keys[0].Signing {
		t.Fatalf("rotate on a new cluster = %+v, want the first key and a new one that signs", keys)
	}
	keys := list("--sign-after", "1h", "rotate")
	if len(keys) != 3 || keys[0].Signing || !keys[1].Signing {
		t.Fatalf("after rotate = %+v, want the new key not signing yet", keys)
	}
	if keys[0].Created.IsZero() || time.Since(keys[0].Created) > time.Hour {
		t.Errorf("the new key's creation date = %v, want it recorded", keys[0].Created)
	}
	var text bytes.Buffer
	if err := execute(t.Context(), &text, "keys", "--etcd", etcd, "list"); err != nil || !strings.Contains(text.String(), "CREATED") ||
		!strings.Contains(text.String(), keys[0].Created.UTC().Format(time.RFC3339)) {
		t.Errorf("keys list said %q (%v), want ids and dates", text.String(), err)
	}
	if keys := list("retire"); len(keys) != 2 {
		t.Fatalf("after retire = %+v, want the newest two: the older one signs until the newer one's time comes", keys)
	}
	// Refused before etcd is asked: the keys stay as they were.
	for _, args := range [][]string{{"shred"}, {"retire", "--keep", "0"}, {"rotate", "--sign-after", "-1s"}} {
		if err := execute(t.Context(), &bytes.Buffer{}, append([]string{"keys", "--etcd", etcd}, args...)...); !errors.Is(err, errUsage) {
			t.Errorf("keys %v = %v, want a usage error", args, err)
		}
	}
	if keys := list("list"); len(keys) != 2 || !keys[1].Signing {
		t.Fatalf("after the refused calls = %+v, want both keys, the older signing", keys)
	}
}

// TestKeysRetireKeepsKeysOfLiveLeases: run right after a rotation, retire
// keeps the old key while a lease granted under it lives, names the lease
// and what is left of its TTL, and exits with an error; --dry-run says so
// and changes nothing; --force retires it all the same; once the leases
// have ended a plain retire does.
func TestKeysRetireKeepsKeysOfLiveLeases(t *testing.T) {
	srv, cli := testenv.PrivateEtcd(t)
	etcd := strings.Join(srv.Endpoints(), ",")
	a := authority.NewEtcd(cli, testenv.KEK())
	lease, err := a.Acquire(t.Context(), "keys/held", authority.AcquireOptions{TTL: time.Minute, Owner: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keysDocOf(t, etcd, "rotate", "--sign-after", "0s"); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{{"retire"}, {"retire", "--dry-run"}} {
		doc, err := keysDocOf(t, etcd, args...)
		dry := len(args) > 1
		switch {
		case dry && err != nil, !dry && !errors.Is(err, authority.ErrKeyInUse):
			t.Fatalf("keys %v: %v, want ErrKeyInUse only without --dry-run", args, err)
		case len(doc.Retirement) != 1 || doc.Retirement[0].Retired || doc.Retirement[0].LiveLeases != 1:
			t.Fatalf("keys %v: retirement %+v, want the old key kept for one lease", args, doc.Retirement)
		case doc.DryRun != dry || len(doc.Keys) != 2 || len(doc.RetiredKeys) != 0:
			t.Fatalf("keys %v: %+v, want both keys still in service", args, doc)
		}
		if l := doc.Retirement[0].Leases[0]; l.ID != lease.ID.String() || l.Resource != "keys/held" || l.TTLSeconds <= 0 {
			t.Fatalf("keys %v names %+v, want lease %s on keys/held with its TTL", args, l, lease.ID)
		}
	}
	var out bytes.Buffer
	err = execute(t.Context(), &out, "keys", "--etcd", etcd, "retire")
	if !errors.Is(err, authority.ErrKeyInUse) || !strings.Contains(err.Error(), lease.ID.String()) || !strings.Contains(out.String(), "kept ") ||
		!strings.Contains(out.String(), "lease "+lease.ID.String()+" on keys/held") {
		t.Fatalf("keys retire without --json: %v\n%s\nwant the kept key and its lease named", err, out.String())
	}

	doc, err := keysDocOf(t, etcd, "retire", "--dry-run", "--force")
	if err != nil || len(doc.Retirement) != 1 || !doc.Retirement[0].Retired || len(doc.Keys) != 2 {
		t.Fatalf("retire --dry-run --force: %+v, %v; want the old key to be one that would go, and still in service", doc, err)
	}

	// A second lease, granted under the new key, and a newer key still:
	// --force retires the key the first lease's token carries, and the
	// next one, which the second lease holds back, too.
	second, err := a.Acquire(t.Context(), "keys/second", authority.AcquireOptions{TTL: time.Minute, Owner: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keysDocOf(t, etcd, "rotate", "--sign-after", "0s"); err != nil {
		t.Fatal(err)
	}
	if doc, err = keysDocOf(t, etcd, "retire", "--force"); err != nil || len(doc.Retirement) != 2 || len(doc.Keys) != 1 || len(doc.RetiredKeys) != 2 {
		t.Fatalf("retire --force: %+v, %v; want both older keys retired", doc, err)
	}
	for _, d := range doc.Retirement {
		if !d.Retired || d.LiveLeases == 0 || !strings.Contains(d.Reason, "forced") {
			t.Fatalf("retire --force: %+v, want each retired, forced, naming its leases", d)
		}
	}
	if err := a.Release(t.Context(), lease.ID, "billing"); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(t.Context(), second.ID, "billing"); err != nil {
		t.Fatal(err)
	}
	if _, err := keysDocOf(t, etcd, "rotate", "--sign-after", "0s"); err != nil {
		t.Fatal(err)
	}
	if doc, err = keysDocOf(t, etcd, "retire"); err != nil || len(doc.Retirement) != 1 || !doc.Retirement[0].Retired || len(doc.Keys) != 1 || len(doc.RetiredKeys) != 3 {
		t.Fatalf("retire with no live lease: %+v, %v; want the old key retired", doc, err)
	}
}
