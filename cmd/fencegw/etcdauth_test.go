package main

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// passwordFile writes pw to a file of the test's, as `echo` would: with a
// line break after it.
func passwordFile(t *testing.T, pw string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "etcd-password")
	if err := os.WriteFile(path, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEtcdUser: with etcd's auth on, a command reaches etcd as
// --etcd-user with the password in --etcd-password-file (its line break
// trimmed), and serve becomes ready as a user whose role may read and
// write /fencegw/ only, as docs/operations/tls-and-auth.md says, without warning that
// etcd's auth is off (it warns against an etcd without). A wrong password, no user,
// and an unreadable or empty password file are refused, in words naming
// the flags, never the password, and nothing reaches etcd.
func TestEtcdUser(t *testing.T) {
	e := testenv.StartAuthEtcd(t)
	ctx := t.Context()
	ep := strings.Join(e.Endpoints, ",")
	user := []string{"--etcd", ep, "--etcd-user", e.GatewayUser, "--etcd-password-file", passwordFile(t, e.GatewayPassword)}
	if err := execute(ctx, io.Discard, append([]string{"keys", "rotate"}, user...)...); err != nil {
		t.Fatalf("keys rotate as %s: %v", e.GatewayUser, err)
	}

	root := authority.ClientConfig{Endpoints: e.Endpoints, Username: "root", Password: e.RootPassword}
	before := etcdRevision(t, root)
	const wrong = "not-the-password-51c0"
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		usage bool
		words []string
	}{
		{"a wrong password", []string{"--etcd-user", e.GatewayUser, "--etcd-password-file", passwordFile(t, wrong)}, false,
			[]string{"authentication failed", "check --etcd-user (gateway) and --etcd-password-file"}},
		{"no user", nil, false, []string{"user name is empty", "give --etcd-user and --etcd-password-file"}},
		{"a missing password file", []string{"--etcd-user", e.GatewayUser, "--etcd-password-file", empty + ".nope"}, false,
			[]string{"keys: --etcd-password-file: open " + empty + ".nope"}},
		{"an empty password file", []string{"--etcd-user", e.GatewayUser, "--etcd-password-file", empty}, false,
			[]string{"--etcd-password-file " + empty + ": no password in it"}},
		{"a user without a password file", []string{"--etcd-user", e.GatewayUser}, true,
			[]string{"--etcd-user and --etcd-password-file go together"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := execute(ctx, io.Discard, append([]string{"keys", "rotate", "--etcd", ep}, tc.args...)...)
			if err == nil || errors.Is(err, errUsage) != tc.usage || strings.Contains(err.Error(), wrong) {
				t.Fatalf("keys rotate = %v, want an error without the password (usage: %v)", err, tc.usage)
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("keys rotate = %v\nwant it to say %q", err, w)
				}
			}
		})
	}
	if after := etcdRevision(t, root); after != before {
		t.Errorf("etcd's revision went from %d to %d: a refused command wrote", before, after)
	}

	cfg := serveConfigFor(t, migrated(t), "../../testdata/demo/policy.yaml")
	cfg.EtcdEndpoints = e.Endpoints
	cfg.EtcdAccess = etcdAccess{User: e.GatewayUser, PasswordFile: passwordFile(t, e.GatewayPassword)}
	var log testenv.Buffer
	cfg.logOut = &log
	addr, stop := serveInBackground(t, cfg)
	if code := getStatus(t, "http://"+addr+"/readyz"); code != http.StatusOK {
		t.Errorf("readyz as %s = %d, want 200", e.GatewayUser, code)
	}
	if err := stop(); err != nil {
		t.Fatalf("serve as %s: %v", e.GatewayUser, err)
	}
	if strings.Contains(log.String(), e.GatewayPassword) {
		t.Errorf("serve logged the etcd password:\n%s", log.String())
	}
	if strings.Contains(log.String(), authOffWarning) {
		t.Errorf("serve warned that etcd's auth is off, with it on:\n%s", log.String())
	}

	cfg = serveConfigFor(t, migrated(t), "../../testdata/demo/policy.yaml")
	var plainLog testenv.Buffer
	cfg.logOut = &plainLog
	_, stop = serveInBackground(t, cfg)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plainLog.String(), authOffWarning) {
		t.Errorf("serve did not warn that etcd's auth is off:\n%s", plainLog.String())
	}
}

// authOffWarning is the start of serve's warning against an etcd whose
// auth is off.
const authOffWarning = "etcd's auth is off"
