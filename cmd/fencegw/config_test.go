package main

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFlagsAfterTheCommand: `fencegw epoch show --etcd X` reads as the
// README writes it; words keep their order, and "--" ends the flags.
func TestFlagsAfterTheCommand(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		etcd  string
		words []string
	}{
		{[]string{"show", "--etcd", "e:1"}, "e:1", []string{"show"}},
		{[]string{"--etcd", "e:1", "show"}, "e:1", []string{"show"}},
		{[]string{"down", "--etcd=e:2", "2"}, "e:2", []string{"down", "2"}},
		{[]string{"show", "--", "--etcd", "x"}, "", []string{"show", "--etcd", "x"}},
		{nil, "", nil},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		etcd := fs.String("etcd", "", "")
		if err := parseInterspersed(fs, tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if *etcd != tc.etcd || !slices.Equal(fs.Args(), tc.words) && len(fs.Args())+len(tc.words) > 0 {
			t.Errorf("%q: etcd %q, words %q; want %q, %q", tc.args, *etcd, fs.Args(), tc.etcd, tc.words)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := parseInterspersed(fs, []string{"show", "--nope"}); err == nil {
		t.Error("an unknown flag after the command was accepted")
	}
}

// TestServeFlagsFromTheEnvironment: every serve flag reads FENCEGW_<FLAG>
// (and the older names), the command line wins, a bad value is a usage
// error naming the variable, and nothing in the environment turns the
// fence off.
func TestServeFlagsFromTheEnvironment(t *testing.T) {
	t.Setenv("FENCEGW_MAX_BODY", "123")
	t.Setenv("FENCEGW_LISTEN", "127.0.0.1:9")
	t.Setenv("FENCEGW_GROUP_COMMIT", "false")
	t.Setenv("FENCEGW_SHUTDOWN_DELAY", "2s")
	t.Setenv("DATABASE_URL", "postgres://from-env")
	t.Setenv("FENCEGW_ETCD_ENDPOINTS", "a:1,b:2")
	t.Setenv("FENCEGW_UNSAFE_NO_FENCE", "true")
	var cfg serveConfig
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg.bind(fs, serveDefaults)
	cfg.bindBackends(fs, allBackends)
	fs.BoolVar(&cfg.UnsafeNoFence, "unsafe-no-fence", false, "")
	if err := fs.Parse([]string{"--listen", "127.0.0.1:7"}); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(fs); err != nil {
		t.Fatal(err)
	}
	if cfg.MaxBodyBytes != 123 || cfg.GroupCommit || cfg.ShutdownDelay != 2*time.Second ||
		cfg.DatabaseURL != "postgres://from-env" || !slices.Equal(cfg.EtcdEndpoints, []string{"a:1", "b:2"}) {
		t.Errorf("from the environment: %+v", cfg)
	}
	if cfg.Listen != "127.0.0.1:7" {
		t.Errorf("listen = %q, want the command line's over FENCEGW_LISTEN", cfg.Listen)
	}
	if cfg.UnsafeNoFence {
		t.Error("FENCEGW_UNSAFE_NO_FENCE turned the fence off")
	}
	t.Setenv("FENCEGW_WRITE_TIMEOUT", "soon")
	err := applyEnv(fs)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "FENCEGW_WRITE_TIMEOUT") {
		t.Errorf("a bad duration in the environment = %v, want a usage error naming FENCEGW_WRITE_TIMEOUT", err)
	}
}
