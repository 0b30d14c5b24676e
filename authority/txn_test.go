package authority_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestTxnsAreNamed: the authority builds every etcd transaction from
// named operations and reads its responses by name (txn.go): no Txn is
// begun elsewhere, and no response is read by its position, which the
// next operation added in front of it would make another's.
func TestTxnsAreNamed(t *testing.T) {
	positional := regexp.MustCompile(`\.Responses\[`)
	begun := regexp.MustCompile(`\.Txn\(`)
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			switch {
			case positional.MatchString(line):
				t.Errorf("%s:%d: a transaction's response read by position: read it by name (txn.go)", name, i+1)
			case begun.MatchString(line) && name != "txn.go":
				t.Errorf("%s:%d: an etcd Txn begun outside txn.go: build a txn of named operations", name, i+1)
			}
		}
	}
}
