package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// TestFlagsAfterTheCommand: flags stand anywhere after the command, as
// the docs write them (`fencegw epoch show --etcd X`); words keep their
// order, and "--" ends the flags.
func TestFlagsAfterTheCommand(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		command    string
		flag, want string
		words      []string
	}{
		{[]string{"epoch", "show", "--database-url", "e:1"}, "show", "database-url", "e:1", nil},
		{[]string{"epoch", "--database-url", "u", "bump"}, "bump", "database-url", "u", nil},
		{[]string{"migrate", "down", "--dir=d", "2"}, "down", "dir", "d", []string{"2"}},
		{[]string{"guard", "install", "--policy", "p.yaml"}, "install", "policy", "p.yaml", nil},
		{[]string{"keys", "rotate", "--sign-after", "1m"}, "rotate", "sign-after", "1m0s", nil},
		{[]string{"inspect", "--limit", "3", "--json"}, "inspect", "limit", "3", nil},
		{[]string{"lock", "r", "--ttl", "5s", "--", "sh", "-c", "--ttl"}, "lock", "ttl", "5s", []string{"r", "sh", "-c", "--ttl"}},
	} {
		cmd, rest, err := rootCommand(io.Discard).Find(tc.args)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		got := cmd.Flags().Lookup(tc.flag).Value.String()
		if cmd.Name() != tc.command || got != tc.want || !slices.Equal(cmd.Flags().Args(), tc.words) {
			t.Errorf("%q: command %s, --%s %q, words %q; want %s, %q, %q", tc.args, cmd.Name(), tc.flag, got, cmd.Flags().Args(), tc.command, tc.want, tc.words)
		}
	}
	for _, args := range [][]string{{"epoch", "show", "--nope"}, {"migrate", "up", "--sign-after", "1s"}, {"keys", "list", "--keep", "2"}} {
		if err := execute(t.Context(), io.Discard, args...); !errors.Is(err, errUsage) {
			t.Errorf("%q = %v, want a usage error (a flag the command does not take)", args, err)
		}
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
	cmd := &cobra.Command{}
	fs := cmd.Flags()
	cfg.bind(cmd, serveDefaults)
	cfg.bindBackends(cmd, fs, allBackends)
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

// TestFlagErrorsInTheUsersWords: a value a flag refuses is a usage error
// saying what the flag takes, in the user's words, not Go's parser's, on
// the command line as in the environment; a long flag with one dash (as
// Go's flag package took them) and a negative count are named as such.
func TestFlagErrorsInTheUsersWords(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"serve", "--max-body", "abc"}, "", `--max-body "abc": want a whole number`},
		{[]string{"serve", "--write-timeout", "10"}, "", "want a duration with its unit"},
		{[]string{"serve", "--group-commit=maybe"}, "", "want true or false"},
		{[]string{"serve", "--policy", "p.yaml", "--database-url", "postgres://x/y"}, "FENCEGW_SHUTDOWN_DELAY=soon", `FENCEGW_SHUTDOWN_DELAY="soon": want a duration`},
		{[]string{"-version"}, "", "long flags take two dashes"},
		{[]string{"serve", "-policy", "p.yaml"}, "", "-policy: long flags take two dashes: --policy"},
		{[]string{"migrate", "down", "-1"}, "", "-1: a negative number"},
	} {
		if tc.env != "" {
			name, value, _ := strings.Cut(tc.env, "=")
			t.Setenv(name, value)
		}
		err := execute(t.Context(), io.Discard, tc.args...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "strconv") || strings.Contains(err.Error(), "time:") {
			t.Errorf("%q = %v, want a usage error saying %q", tc.args, err, tc.want)
		}
	}
}
