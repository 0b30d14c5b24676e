package harness_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/fencegw/fencegw/"

// TestLayering holds the module to its three kinds of internal package:
// no code outside cmd/ and tests imports a harness; the dev servers
// (internal/devserver: a throwaway PostgreSQL, an embedded etcd) are
// started only by cmd/ (dev, bench) and harnesses; and no leaf helper of
// internal/ imports a product package or a harness. And package node, what
// a replica does besides answering requests, knows no HTTP: the gateway
// reads it, and serve wires the two.
func TestLayering(t *testing.T) {
	root := filepath.Join("..", "..")
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		checked++
		for _, imp := range imports(t, path) {
			if why := forbidden(rel, imp); why != "" {
				t.Errorf("%s imports %s: %s", rel, imp, why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d Go files checked: the walk did not reach the module", checked)
	}
}

// forbidden says why the file at rel (relative to the module) may not
// import imp, or "" if it may.
func forbidden(rel, imp string) string {
	if strings.HasPrefix(rel, "node/") && (imp == module+"gateway" || imp == "net/http") {
		return "the node answers no request: the gateway reads the node, never the other way"
	}
	if !strings.HasPrefix(imp, module) {
		return ""
	}
	target := strings.TrimPrefix(imp, module)
	// The examples' stories' shared test setup is a harness too, kept
	// beside them for their internal packages (the fake provider).
	harness := strings.HasPrefix(target, "internal/harness/") || strings.HasPrefix(target, "examples/internal/storytest")
	devserver := strings.HasPrefix(target, "internal/devserver/")
	switch {
	case strings.HasPrefix(rel, "cmd/"), strings.HasPrefix(rel, "internal/harness/"), strings.HasPrefix(rel, "examples/internal/storytest/"):
		return ""
	case harness:
		return "only cmd/ and tests import a harness"
	case devserver && !strings.HasPrefix(rel, "internal/devserver/"):
		return "only cmd/ (dev, bench), harnesses and tests start a dev server"
	case strings.HasPrefix(rel, "internal/") && !strings.HasPrefix(target, "internal/"):
		return "a leaf helper of internal/ imports no product package"
	}
	return ""
}

func imports(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(f.Imports))
	for _, s := range f.Imports {
		p, _ := strconv.Unquote(s.Path.Value)
		out = append(out, p)
	}
	return out
}

// TestLayeringFindsViolations: the rule refuses what it must, and allows
// the rest.
func TestLayeringFindsViolations(t *testing.T) {
	for _, tc := range []struct {
		file, imp string
		refused   bool
	}{
		{"gateway/gateway.go", module + "internal/harness/testenv", true},
		{"examples/leader/main.go", module + "internal/harness/bench", true},
		{"examples/refund/main.go", module + "examples/internal/storytest", true},
		{"examples/internal/storytest/storytest.go", module + "internal/harness/testgw", false},
		{"internal/devserver/pgcluster/cluster.go", module + "gateway", true},
		{"internal/devserver/etcdserver/server.go", module + "internal/harness/testcerts", true},
		{"gateway/gateway.go", module + "internal/devserver/pgcluster", true},
		{"cmd/fencegw/dev.go", module + "internal/devserver/etcdserver", false},
		{"internal/harness/testenv/testenv.go", module + "internal/devserver/pgcluster", false},
		{"cmd/fencegw/bench.go", module + "internal/harness/bench", false},
		{"internal/harness/bench/run.go", module + "gateway", false},
		{"gateway/gateway.go", module + "internal/clip", false},
		{"internal/devserver/pgcluster/cluster.go", module + "internal/clip", false},
		{"gateway/gateway.go", "net/http", false},
		{"node/audit.go", module + "gateway", true},
		{"node/node.go", "net/http", true},
		{"gateway/node.go", module + "node", false},
	} {
		if got := forbidden(tc.file, tc.imp) != ""; got != tc.refused {
			t.Errorf("%s importing %s: refused %v, want %v", tc.file, tc.imp, got, tc.refused)
		}
	}
}
