package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/internal/buildinfo"
)

// TestVersion: `fencegw version --json` is one JSON document naming the
// build; the plain form is one line; arguments are refused.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := execute(context.Background(), &out, "version", "--json"); err != nil {
		t.Fatal(err)
	}
	var info buildinfo.Info
	dec := json.NewDecoder(&out)
	if err := dec.Decode(&info); err != nil {
		t.Fatalf("version --json: %v", err)
	}
	if dec.More() {
		t.Error("version --json printed more than one document")
	}
	if info.GoVersion != runtime.Version() || info.Revision == "" {
		t.Errorf("version --json = %+v", info)
	}
	out.Reset()
	if err := execute(context.Background(), &out, "version"); err != nil || !strings.HasPrefix(out.String(), "fencegw ") || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("version = %q, %v; want one line", out.String(), err)
	}
	if err := execute(context.Background(), &out, "version", "now"); !errors.Is(err, errUsage) {
		t.Errorf("version now = %v, want a usage error", err)
	}
}

// TestVersionFlag: `fencegw --version` prints the same line as `fencegw
// version`.
func TestVersionFlag(t *testing.T) {
	var out bytes.Buffer
	if err := execute(t.Context(), &out, "--version"); err != nil || out.String() != buildinfo.Read().String()+"\n" {
		t.Errorf("--version = %q, %v; want %q", out.String(), err, buildinfo.Read().String())
	}
}

// TestEveryCommandHasHelp: every command and verb of the tree has a
// description and an example, and `fencegw help CMD...`, `CMD... -h` and
// `CMD... --help` print them instead of running it (or opening a file
// named -h). Unknown commands are usage errors.
func TestEveryCommandHasHelp(t *testing.T) {
	var walk func(*cobra.Command, []string)
	walk = func(cmd *cobra.Command, path []string) {
		for _, c := range cmd.Commands() {
			if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
				continue // cobra's own, with help of cobra's
			}
			p := append(slices.Clone(path), c.Name())
			if c.Short == "" || c.Example == "" {
				t.Errorf("fencegw %s: no description or no example", strings.Join(p, " "))
			}
			for _, args := range [][]string{append([]string{"help"}, p...), append(p, "-h"), append(p, "--help")} {
				var out bytes.Buffer
				err := execute(t.Context(), &out, args...)
				if err != nil || !strings.Contains(out.String(), "Usage:") || !strings.Contains(out.String(), c.Example) || !strings.Contains(out.String(), cmp.Or(c.Long, c.Short)) {
					t.Errorf("fencegw %s = %v, %q; want its help", strings.Join(args, " "), err, out.String())
				}
			}
			walk(c, p)
		}
	}
	walk(rootCommand(io.Discard), nil)
	for _, args := range [][]string{{"nosuch"}, {}, {"epoch"}, {"epoch", "reset"}, {"serve", "extra"}, {"help", "bogus"}, {"help", "serve", "bogus"}} {
		if err := execute(t.Context(), io.Discard, args...); !errors.Is(err, errUsage) {
			t.Errorf("fencegw %q = %v, want a usage error", args, err)
		}
	}
}

// TestShellCompletion: `fencegw completion bash` prints a script, and the
// shell's questions are answered with the tree's commands, verbs, flags
// and flag values.
func TestShellCompletion(t *testing.T) {
	var out bytes.Buffer
	if err := execute(t.Context(), &out, "completion", "bash"); err != nil || !strings.Contains(out.String(), "__start_fencegw") {
		t.Fatalf("completion bash = %v, %.200q", err, out.String())
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{""}, []string{"serve", "dev", "epoch", "torture"}},
		{[]string{"epoch", ""}, []string{"show", "bump"}},
		{[]string{"serve", "--log-f"}, []string{"--log-format"}},
		{[]string{"serve", "--log-format", ""}, []string{"json", "text"}},
		{[]string{"epoch", "show", "--"}, []string{"--etcd", "--database-url"}},
	} {
		out.Reset()
		if err := execute(t.Context(), &out, append([]string{cobra.ShellCompRequestCmd}, tc.args...)...); err != nil {
			t.Fatalf("complete %q: %v", tc.args, err)
		}
		var got []string
		for _, line := range strings.Split(out.String(), "\n") {
			if line != "" && !strings.HasPrefix(line, ":") && !strings.HasPrefix(line, "Completion ended") {
				got = append(got, strings.SplitN(line, "\t", 2)[0])
			}
		}
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("complete %q = %q, want %q among them", tc.args, got, w)
			}
		}
	}
}
