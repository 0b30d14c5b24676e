package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/kek"
)

// TestKEKRotationRunbook walks docs/operations/keys.md's KEK rotation with a
// gateway serving: a new KEK appended to its file, keys rewrap (every key
// sealed under it), the old line removed. The gateway picks each file up
// as it changes, a token granted before the rotation writes after it,
// and a key rotated in after it opens there.
func TestKEKRotationRunbook(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	etcd := strings.Join(cli.Endpoints(), ",")
	cfg := serveConfigFor(t, migrated(t), "../../testdata/demo/policy.yaml")
	cfg.EtcdEndpoints = cli.Endpoints()
	var log testenv.Buffer
	cfg.logOut = &log
	dir := t.TempDir()
	old := kek.New()
	cfg.KEK.File = filepath.Join(dir, "token.kek")
	replace := func(data []byte) {
		t.Helper()
		if err := os.WriteFile(cfg.KEK.File+".next", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(cfg.KEK.File+".next", cfg.KEK.File); err != nil {
			t.Fatal(err)
		}
	}
	replace(old)
	base := "http://" + runServe(t, cfg)
	resp, err := http.Post(base+"/v1/leases", "application/json", strings.NewReader(`{"resource": "account/acct-3", "ttl": 120}`))
	if err != nil {
		t.Fatal(err)
	}
	var lease struct{ Token string }
	_ = json.NewDecoder(resp.Body).Decode(&lease)
	resp.Body.Close()

	var newer strings.Builder
	if err := execute(context.Background(), &newer, "kek", "new"); err != nil {
		t.Fatal(err)
	}
	ring, err := kek.Parse([]byte(newer.String()))
	if err != nil {
		t.Fatal(err)
	}
	replace(append(append([]byte{}, old...), newer.String()...))
	loaded := func(keks string) bool {
		return strings.Contains(log.String(), "keks="+keks+" newest="+ring.Newest())
	}
	if !testenv.WaitFor(time.Minute, func() bool { return loaded("2") }) {
		t.Fatalf("the gateway did not load the appended KEK:\n%s", log.String())
	}
	var out strings.Builder
	if err := execute(context.Background(), &out, "keys", "rewrap", "--etcd", etcd, "--token-kek-file", cfg.KEK.File); err != nil {
		t.Fatalf("keys rewrap: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "sealed 1 under KEK "+ring.Newest()) {
		t.Fatalf("keys rewrap printed:\n%s", out.String())
	}
	replace([]byte(newer.String()))
	if !testenv.WaitFor(time.Minute, func() bool { return loaded("1") }) {
		t.Fatalf("the gateway did not load the file without the old KEK:\n%s", log.String())
	}
	if err := execute(context.Background(), io.Discard, "keys", "rotate", "--sign-after", "0s", "--etcd", etcd, "--token-kek-file", cfg.KEK.File); err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(time.Minute, func() bool {
		m := scrape(t, http.DefaultClient, base+"/metrics")
		return strings.Contains(m, "\nfencegw_signing_keys 2\n") && strings.Contains(m, "\nfencegw_signing_keys_unusable 0\n")
	}) {
		t.Fatalf("the gateway does not open both keys under the new KEK alone:\n%s", log.String())
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/ops/debit", strings.NewReader(`{"account": "acct-3", "amount_cents": 100}`))
	req.Header.Set("Fencing-Token", lease.Token)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a write with the token granted before the KEK rotation: %d", resp.StatusCode)
	}
	if strings.Contains(log.String(), strings.TrimSpace(strings.Split(newer.String(), "\n")[1])) {
		t.Fatal("the log quotes the KEK")
	}
}
