package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
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

// shortKEK is a KEK file's line of the wrong length: 24 bytes.
var shortKEK = base64.StdEncoding.EncodeToString([]byte("twenty-four bytes, not32"))

// TestServeRefusesABadKEKFile: without --token-kek-file, or with one that
// is missing, empty, unreadable, not base64 or of the wrong length, serve
// refuses to start before it waits for any backend, with an error that
// names the flag and the fault and quotes nothing of the file.
func TestServeRefusesABadKEKFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct{ name, file, want string }{
		{"none", "", "no --token-kek-file"},
		{"missing", filepath.Join(dir, "nope.kek"), "no such file"},
		{"empty", write("empty.kek", "\n"), "file is empty"},
		{"a folder", dir, "is a directory"},
		{"not base64", write("text.kek", "# a KEK\nnot a KEK at all, far too long to be one\n"), "line 2 is not standard base64"},
		{"the wrong length", write("short.kek", shortKEK+"\n"), "line 1 holds 24 bytes: a KEK is 32"},
		{"only comments", write("comments.kek", "# nothing\n"), "holds no KEK"},
	}
	if os.Geteuid() != 0 { // root reads any file
		cases = append(cases, struct{ name, file, want string }{"unreadable", write("locked.kek", shortKEK), "permission denied"})
		if err := os.Chmod(filepath.Join(dir, "locked.kek"), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := serveConfigFor(t, "postgres://fencegw@127.0.0.1:1/nowhere", "../../testdata/demo/policy.yaml")
			cfg.EtcdEndpoints = []string{"127.0.0.1:1"}
			cfg.KEK.File = tc.file
			err := serve(context.Background(), cfg, func(string) { t.Error("serve started") })
			if err == nil || !strings.Contains(err.Error(), "--token-kek-file") || !strings.Contains(err.Error(), tc.want) ||
				strings.Contains(err.Error(), shortKEK) || strings.Contains(err.Error(), "far too long") {
				t.Fatalf("serve = %v, want a refusal naming --token-kek-file and %q, quoting nothing of the file", err, tc.want)
			}
			if (tc.file == "") != errors.Is(err, errUsage) {
				t.Errorf("serve = %v: a usage error only without the flag", err)
			}
		})
	}
}

// TestServeKeepsItsKEKOnABadReload: a gateway whose KEK file is replaced
// by one that is empty, of the wrong length, or removed keeps the KEKs it
// has: each change is logged and counted
// (fencegw_credential_reload_failures_total{file="token-kek"}), and a
// signing key made after them, under the KEK it kept, opens there.
func TestServeKeepsItsKEKOnABadReload(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t) // keys of its own: a rotation here concerns no other test
	cfg := serveConfigFor(t, migrated(t), "../../testdata/demo/policy.yaml")
	cfg.EtcdEndpoints = cli.Endpoints()
	var log testenv.Buffer
	cfg.logOut = &log
	dir := t.TempDir()
	good, err := os.ReadFile(testenv.KEKFile(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.KEK.File = filepath.Join(dir, "token.kek")
	replace := func(data string) {
		t.Helper()
		tmp := filepath.Join(dir, "next.kek")
		if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, cfg.KEK.File); err != nil { // as a secret mount swaps its files
			t.Fatal(err)
		}
	}
	replace(string(good))
	addr := runServe(t, cfg)

	metrics := "http://" + addr + "/metrics"
	for i, bad := range []func(){
		func() { replace("") },
		func() { replace(shortKEK + "\n") },
		func() {
			if err := os.Remove(cfg.KEK.File); err != nil {
				t.Fatal(err)
			}
		},
	} {
		bad()
		want := fmt.Sprintf(`fencegw_credential_reload_failures_total{file="token-kek"} %d`, i+1)
		if !testenv.WaitFor(time.Minute, func() bool { return strings.Contains(scrape(t, http.DefaultClient, metrics), want) }) {
			t.Fatalf("change %d of the KEK file: no %s in /metrics; log:\n%s", i+1, want, log.String())
		}
	}
	if !strings.Contains(log.String(), "a changed credential file did not load") || strings.Contains(log.String(), shortKEK) {
		t.Fatalf("the log does not say the KEK file did not load, or quotes it:\n%s", log.String())
	}

	// A key made now is sealed under the KEK the gateway kept.
	if err := execute(context.Background(), io.Discard, "keys", "rotate", "--sign-after", "0s", "--etcd", strings.Join(cli.Endpoints(), ",")); err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(time.Minute, func() bool {
		m := scrape(t, http.DefaultClient, metrics)
		return strings.Contains(m, "\nfencegw_signing_keys 2\n") && strings.Contains(m, "\nfencegw_signing_keys_unusable 0\n")
	}) {
		t.Fatalf("the gateway did not open the rotated key with the KEK it kept; log:\n%s", log.String())
	}
}

// TestKEKNew: kek new makes a file of one KEK readable by its owner only,
// never overwrites one (--if-missing keeps it and succeeds), and without
// a file prints one; keys refuses to run without a KEK file.
func TestKEKNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token.kek")
	if err := execute(context.Background(), io.Discard, "kek", "new", path); err != nil {
		t.Fatal(err)
	}
	made, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kek.Parse(made); err != nil {
		t.Fatalf("kek new's file: %v", err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("kek new's file has mode %v, want 0600", fi.Mode().Perm())
	}
	if err := execute(context.Background(), io.Discard, "kek", "new", path); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("kek new on an existing file = %v, want a refusal", err)
	}
	if err := execute(context.Background(), io.Discard, "kek", "new", "--if-missing", path); err != nil {
		t.Errorf("kek new --if-missing on an existing file = %v", err)
	}
	if again, _ := os.ReadFile(path); string(again) != string(made) {
		t.Error("kek new changed an existing file")
	}
	var out strings.Builder
	if err := execute(context.Background(), &out, "kek", "new"); err != nil {
		t.Fatal(err)
	}
	if _, err := kek.Parse([]byte(out.String())); err != nil {
		t.Errorf("kek new's output: %v", err)
	}

	t.Setenv("FENCEGW_TOKEN_KEK_FILE", "")
	err = execute(context.Background(), io.Discard, "keys", "list", "--etcd", strings.Join(testenv.EtcdEndpoints(), ","))
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--token-kek-file") {
		t.Errorf("keys list without a KEK file = %v, want a usage error naming --token-kek-file", err)
	}
}
