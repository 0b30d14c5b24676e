package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// metricConstructors are client_golang's constructors whose first
// argument's Name is a metric's name; the vectors' second argument lists
// its labels.
var metricConstructors = map[string]bool{
	"NewCounter": true, "NewCounterVec": true, "NewCounterFunc": true,
	"NewGauge": true, "NewGaugeVec": true, "NewGaugeFunc": true,
	"NewHistogram": true, "NewHistogramVec": true,
	"NewSummary": true, "NewSummaryVec": true,
}

// exportedMetrics reads, from the product's Go source under root (tests
// and testdata aside), every metric registered with a literal name, and
// its label names: a histogram's series too (_bucket with le, _sum,
// _count).
func exportedMetrics(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	eachSourceFile(t, root, func(f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !metricConstructors[sel.Sel.Name] {
				return true
			}
			name, labels := metricOpts(call.Args[0])
			if name == "" {
				return true
			}
			if len(call.Args) > 1 && strings.HasSuffix(sel.Sel.Name, "Vec") {
				labels = append(labels, stringList(call.Args[1])...)
			}
			out[name] = labels
			if strings.HasPrefix(sel.Sel.Name, "NewHistogram") {
				out[name+"_bucket"] = append(append([]string{}, labels...), "le")
				out[name+"_sum"], out[name+"_count"] = labels, labels
			}
			return true
		})
	})
	if len(out) < 10 {
		t.Fatalf("found %d metrics in the source: the reading no longer finds them", len(out))
	}
	return out
}

// metricOpts is the Name of a prometheus.*Opts literal and its
// ConstLabels' keys.
func metricOpts(e ast.Expr) (name string, labels []string) {
	if u, ok := e.(*ast.UnaryExpr); ok {
		e = u.X
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return "", nil
	}
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		switch key, _ := kv.Key.(*ast.Ident); {
		case key == nil:
		case key.Name == "Name":
			name = stringValue(kv.Value)
		case key.Name == "ConstLabels":
			if m, ok := kv.Value.(*ast.CompositeLit); ok {
				for _, el := range m.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						labels = append(labels, stringValue(kv.Key))
					}
				}
			}
		}
	}
	return name, labels
}

// stringList is the values of a []string{…} literal.
func stringList(e ast.Expr) []string {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	var out []string
	for _, el := range lit.Elts {
		if s := stringValue(el); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func stringValue(e ast.Expr) string {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return s
}

// stringLiterals is every string literal of the product's Go source under
// root: the label values a rule may match are spelled there.
func stringLiterals(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	eachSourceFile(t, root, func(f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			if s := stringValue(asExpr(n)); s != "" {
				out[s] = true
			}
			return true
		})
	})
	return out
}

func asExpr(n ast.Node) ast.Expr {
	e, _ := n.(ast.Expr)
	return e
}

// eachSourceFile parses every Go file under root but tests, testdata and
// the repository's own metadata, and hands it to fn.
func eachSourceFile(t *testing.T, root string, fn func(*ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		fn(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
