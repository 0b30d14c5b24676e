package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/internal/testenv"
)

// TestKeysCommand: list creates the first key; rotate adds one that signs
// later; retire keeps the newest; --json is one document of IDs, never the
// keys' bytes.
func TestKeysCommand(t *testing.T) {
	srv, _ := testenv.PrivateEtcd(t) // retiring keys would refuse other tests' tokens
	etcd := strings.Join(srv.Endpoints(), ",")
	list := func(args ...string) []map[string]any {
		t.Helper()
		var out bytes.Buffer
		if err := execute(t.Context(), &out, append([]string{"keys", "--etcd", etcd, "--json"}, args...)...); err != nil {
			t.Fatalf("keys %v: %v", args, err)
		}
		var doc struct{ Keys []map[string]any }
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("keys %v --json: %v\n%s", args, err, out.Bytes())
		}
		if strings.Contains(out.String(), "secret") {
			t.Fatalf("keys %v shows key material: %s", args, out.Bytes())
		}
		return doc.Keys
	}
	if keys := list("list"); len(keys) != 1 || keys[0]["signing"] != true {
		t.Fatalf("first list = %v, want one signing key", keys)
	}
	if keys := list("--sign-after", "1h", "rotate"); len(keys) != 2 || keys[0]["signing"] != false || keys[1]["signing"] != true {
		t.Fatalf("after rotate = %v, want the new key not signing yet", keys)
	}
	if keys := list("retire"); len(keys) != 1 {
		t.Fatalf("after retire = %v, want one key", keys)
	}
	// Refused before etcd is asked: the keys stay as they were.
	for _, args := range [][]string{{"shred"}, {"retire", "--keep", "0"}, {"rotate", "--sign-after", "-1s"}} {
		if err := execute(t.Context(), &bytes.Buffer{}, append([]string{"keys", "--etcd", etcd}, args...)...); !errors.Is(err, errUsage) {
			t.Errorf("keys %v = %v, want a usage error", args, err)
		}
	}
	if keys := list("list"); len(keys) != 1 || keys[0]["signing"] != true {
		t.Fatalf("after the refused calls = %v, want the one signing key left by retire", keys)
	}
}
