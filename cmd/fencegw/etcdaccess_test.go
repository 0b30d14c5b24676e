package main

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestEtcdAccessFromTheEnvironment: the etcd flags of every command that
// takes them read FENCEGW_<FLAG>, then etcdctl's variable, and the
// command line wins; help shows no value from the environment; bench,
// whose etcd is its own unless --etcd says otherwise, reads none.
func TestEtcdAccessFromTheEnvironment(t *testing.T) {
	t.Setenv("ETCDCTL_ENDPOINTS", "https://e1:2379,https://e2:2379")
	t.Setenv("ETCDCTL_CACERT", "/etcdctl/ca.crt")
	t.Setenv("FENCEGW_ETCD_CACERT", "/fencegw/ca.crt")
	t.Setenv("ETCDCTL_CERT", "/etcdctl/client.crt")
	t.Setenv("ETCDCTL_KEY", "/etcdctl/client.key")
	t.Setenv("FENCEGW_ETCD_USER", "gateway")
	t.Setenv("FENCEGW_ETCD_PASSWORD_FILE", "/run/secrets/etcd")
	want := map[string]string{
		"etcd": "https://e1:2379,https://e2:2379", "etcd-cacert": "/fencegw/ca.crt", "etcd-cert": "/etcdctl/client.crt",
		"etcd-key": "/flag/client.key", "etcd-user": "gateway", "etcd-password-file": "/run/secrets/etcd",
	}
	for _, args := range [][]string{{"keys", "list"}, {"epoch", "show"}, {"inspect"}, {"serve"}} {
		cmd, _, err := rootCommand(io.Discard).Find(args)
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.ParseFlags([]string{"--etcd-key", "/flag/client.key"}); err != nil {
			t.Fatal(err)
		}
		if err := applyEnv(cmd.Flags()); err != nil { // serve's way; a no-op for the others
			t.Fatal(err)
		}
		for flag, w := range want {
			if got := cmd.Flags().Lookup(flag).Value.String(); got != w {
				t.Errorf("%v: --%s = %q, want %q", args, flag, got, w)
			}
		}
	}
	var help bytes.Buffer
	if err := execute(t.Context(), &help, "keys", "--help"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(help.String(), "/fencegw/ca.crt") || !strings.Contains(help.String(), "ETCDCTL_CACERT") {
		t.Errorf("keys --help shows the environment's values, or not the variables' names:\n%s", help.String())
	}

	bench, _, err := rootCommand(io.Discard).Find([]string{"bench"})
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"etcd", "etcd-cacert", "etcd-cert", "etcd-key", "etcd-user"} {
		if got := bench.Flags().Lookup(flag).Value.String(); got != "" {
			t.Errorf("bench --%s = %q from the environment, want nothing", flag, got)
		}
	}
	if err := execute(t.Context(), io.Discard, "bench", "--etcd-cacert", "/ca.crt"); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "are for --etcd") {
		t.Errorf("bench --etcd-cacert without --etcd = %v, want a usage error", err)
	}
}

// TestParsePassword: a password file's one line, its line break trimmed;
// an empty file or one of several lines is refused in words that never
// hold the file's.
func TestParsePassword(t *testing.T) {
	for _, tc := range []struct {
		data, want string
		err        error
	}{
		{"s3cret\n", "s3cret", nil},
		{"s3cret", "s3cret", nil},
		{"s3cret\r\n", "s3cret", nil},
		{" spaced out ", " spaced out ", nil},
		{"", "", errPasswordEmpty},
		{"\n", "", errPasswordEmpty},
		{"s3cret\n\n", "", errPasswordMultiline},
		{"user\ns3cret\n", "", errPasswordMultiline},
	} {
		got, err := parsePassword([]byte(tc.data))
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("parsePassword(%q) = %q, %v; want %q, %v", tc.data, got, err, tc.want, tc.err)
		}
	}
}

func FuzzParsePassword(f *testing.F) {
	for _, seed := range []string{"s3cret\n", "s3cret\r\n", "", "\n", "\r", "a\nb", "a\rb\n", "pw\n\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pw, err := parsePassword(data)
		if err != nil {
			if pw != "" || !(errors.Is(err, errPasswordEmpty) || errors.Is(err, errPasswordMultiline)) {
				t.Fatalf("parsePassword(%q) = %q, %v: want one of its own errors, and no password", data, pw, err)
			}
			return
		}
		if pw == "" || strings.ContainsAny(pw, "\r\n") || !slices.Contains([]string{pw, pw + "\n", pw + "\r", pw + "\r\n"}, string(data)) {
			t.Fatalf("parsePassword(%q) = %q: want the file's one line, without its line break", data, pw)
		}
	})
}
