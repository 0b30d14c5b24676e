package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"runtime"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/internal/buildinfo"
)

// TestVersion: `fencegw version --json` is one JSON document naming the
// build; the plain form is one line; arguments are refused.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := runVersion([]string{"--json"}, &out); err != nil {
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
	if err := runVersion(nil, &out); err != nil || !strings.HasPrefix(out.String(), "fencegw ") || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("version = %q, %v; want one line", out.String(), err)
	}
	if err := runVersion([]string{"now"}, &out); !errors.Is(err, errUsage) {
		t.Errorf("version now = %v, want a usage error", err)
	}
}

// TestEveryCommandHasHelp: `fencegw COMMAND -h` and `fencegw help
// COMMAND` print the command's help instead of running it (or opening a
// file named -h).
func TestEveryCommandHasHelp(t *testing.T) {
	for _, cmd := range []string{"serve", "dev", "migrate", "policy", "inspect", "guard", "epoch", "keys", "lock", "torture", "bench", "version"} {
		for _, args := range [][]string{{cmd, "-h"}, {"help", cmd}, {cmd, "--help"}} {
			err := run(context.Background(), args[0], args[1:])
			if err != nil && !errors.Is(err, flag.ErrHelp) {
				t.Errorf("fencegw %s = %v, want its help", strings.Join(args, " "), err)
			}
		}
	}
	if err := run(context.Background(), "nosuch", nil); !errors.Is(err, errUsage) {
		t.Errorf("an unknown command = %v, want a usage error", err)
	}
}
