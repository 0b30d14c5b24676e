package main

import (
	"flag"
	"io"
	"slices"
	"testing"
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
