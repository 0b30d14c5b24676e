package gateway

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/outcome"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// writeErrors is every error a write can end with, as the write path
// makes it, and what it declares: what became of the write, and whether
// a keyed write's refusal settles its key. TestEveryWriteErrorIsListed
// keeps the list whole.
var writeErrors = []struct {
	name    string
	err     error
	want    outcome.Outcome
	settles bool
}{
	{"fence.ErrUnavailable", fmt.Errorf("%w: no connection", fence.ErrUnavailable), outcome.NotApplied, false},
	{"fence.ErrOutcomeUnknown", fmt.Errorf("%w (%w): lost", fence.ErrUnavailable, fence.ErrOutcomeUnknown), outcome.Unknown, false},
	{"fence.ErrKeyInFlight", fmt.Errorf("%w (%w)", fence.ErrUnavailable, fence.ErrKeyInFlight), outcome.Unknown, false},
	{"fence.ErrConflict", fence.ErrConflict, outcome.Refused, false},
	{"fence.ErrValue", fmt.Errorf("%w: out of range", fence.ErrValue), outcome.Refused, true},
	{"fence.StaleTokenError", &fence.StaleTokenError{}, outcome.Refused, true},
	{"fence.DeadlineError", &fence.DeadlineError{}, outcome.Refused, true},
	{"fence.PreconditionError", &fence.PreconditionError{}, outcome.Refused, true},
	{"fence.ConstraintError", &fence.ConstraintError{}, outcome.Refused, true},
	{"fence.KeyMismatchError", &fence.KeyMismatchError{}, outcome.Refused, false},
	{"fence.WriteError", &fence.WriteError{Err: &fence.StaleTokenError{}}, outcome.Refused, true},
	{"fence.SQLError mapped", &fence.SQLError{Mapped: true, Err: &pgconn.PgError{Code: "PT001"}}, outcome.Refused, true},
	{"fence.SQLError", &fence.SQLError{Err: &pgconn.PgError{Code: "42501"}}, outcome.NotApplied, false},
	{"fence.CommitWarningError", &fence.CommitWarningError{Code: "01000"}, outcome.Unknown, false},
	{"a refusal whose key is in flight", fmt.Errorf("%w (%w)", &fence.StaleTokenError{}, fence.ErrKeyInFlight), outcome.Unknown, true},
	{"tokens.ErrMalformed", fmt.Errorf("%w: no colon", tokens.ErrMalformed), outcome.Refused, false},
	{"tokens.ErrBadResource", tokens.ErrBadResource, outcome.Refused, false},
	{"tokens.ErrRejected", tokens.ErrRejected, outcome.Refused, false},
	{"tokens.RejectedError issued", &tokens.RejectedError{Issued: true}, outcome.Refused, true},
	{"tokens.RejectedError forged", &tokens.RejectedError{}, outcome.Refused, false},
	{"tokens.ErrHalted", tokens.ErrHalted, outcome.NotApplied, false},
	{"tokens.HaltedError", &tokens.HaltedError{Reason: "rolled back"}, outcome.NotApplied, false},
	{"authority.ErrUnavailable", fmt.Errorf("%w: etcd", authority.ErrUnavailable), outcome.NotApplied, false},
	{"policy.ErrBadArgs", &policy.ArgError{}, outcome.Refused, false},
	{"ErrTokenRequired", ErrTokenRequired, outcome.Refused, false},
	{"ErrUnknownOperation", ErrUnknownOperation, outcome.Refused, false},
	{"ErrBadRequest", badRequest("bad JSON"), outcome.Refused, false},
	{"ErrBodyTooLarge", ErrBodyTooLarge, outcome.Refused, false},
	{"ErrContentEncoding", ErrContentEncoding, outcome.Refused, false},
	{"ErrMediaType", ErrMediaType, outcome.Refused, false},
	{"ErrNotReady", ErrNotReady, outcome.NotApplied, false},
	{"ErrShuttingDown", ErrShuttingDown, outcome.NotApplied, false},
	{"ErrOverloaded", ErrOverloaded, outcome.NotApplied, false},
	{"ErrOverloaded, keyed", fmt.Errorf("%w (%w)", ErrOverloaded, fence.ErrKeyInFlight), outcome.Unknown, false},
	{"ErrNoRoute", ErrNoRoute, outcome.Refused, false},
	{"ErrMethod", ErrMethod, outcome.Refused, false},
	{"ErrUnauthorized", ErrUnauthorized, outcome.Refused, false},
	{"ErrForbidden", ErrForbidden, outcome.Refused, false},
	{"ErrTooManyConnections", ErrTooManyConnections, outcome.NotApplied, false},
	{"applicationError", func() error {
		se := &fence.SQLError{Code: "PT001", Mapped: true}
		return &applicationError{mapping: policy.SQLErrorMapping{Status: 409, Kind: "refused"}, sql: se, err: se}
	}(), outcome.Refused, true},
}

// TestEveryWriteErrorDeclaresItsOutcome: each error a write can end with
// says what became of the write, and the problem document says the same.
func TestEveryWriteErrorDeclaresItsOutcome(t *testing.T) {
	for _, tc := range writeErrors {
		t.Run(tc.name, func(t *testing.T) {
			if !outcome.Declared(tc.err) {
				t.Fatal("declares no outcome")
			}
			if got := outcome.Of(tc.err); got != tc.want {
				t.Errorf("outcome %v, want %v", got, tc.want)
			}
			if got := outcome.SettlesKey(tc.err); got != tc.settles {
				t.Errorf("settles its key: %v, want %v", got, tc.settles)
			}
			p := problemFor(tc.err, problemScope{Operation: "debit"})
			switch {
			case p.Status == 503 && p.Outcome != wireOutcome(tc.want):
				t.Errorf("a 503 says outcome %q, want %q", p.Outcome, wireOutcome(tc.want))
			case p.Status != 503 && p.Outcome != "":
				t.Errorf("a %d says outcome %q", p.Status, p.Outcome)
			case p.Status == 503 && tc.want == outcome.Refused:
				t.Errorf("a final refusal answered 503")
			}
		})
	}
}

// notWriteErrors are the exported errors of the write path's packages
// that no write ends with, and why.
var notWriteErrors = map[string]string{
	"fence.ErrFrontRole":   "the SQL front's refusal of a client's sql_role, before its session begins",
	"fence.FrontRoleError": "the SQL front's refusal of a client's sql_role, before its session begins",
}

// TestEveryWriteErrorIsListed: every exported error of fence, tokens and
// gateway (a sentinel, or a type named …Error) is in writeErrors or
// notWriteErrors, and every sentinel is made by outcome.New: a new error
// cannot reach a client without saying what became of its write.
func TestEveryWriteErrorIsListed(t *testing.T) {
	listed := map[string]bool{}
	for _, tc := range writeErrors {
		listed[strings.Fields(tc.name)[0]] = true
	}
	for _, pkg := range []string{"fence", "tokens", "gateway"} {
		prefix := pkg + "."
		if pkg == "gateway" {
			prefix = ""
		}
		for name, declared := range exportedErrors(t, filepath.Join("..", pkg)) {
			if _, ok := notWriteErrors[prefix+name]; ok {
				continue
			}
			if !listed[prefix+name] {
				t.Errorf("%s%s is not in writeErrors: say what a write that ends with it became", prefix, name)
			}
			if !declared {
				t.Errorf("%s%s is made by errors.New: make it with outcome.New", prefix, name)
			}
		}
	}
}

// exportedErrors lists the exported sentinels (Err…) and error types
// (…Error) of the package in dir, each with whether it declares its
// outcome by its making: a sentinel by outcome.New or NewSettling (types
// are checked by value in writeErrors).
func exportedErrors(t *testing.T, dir string) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		{
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					for i, id := range n.Names {
						if !id.IsExported() || !strings.HasPrefix(id.Name, "Err") || i >= len(n.Values) {
							continue
						}
						call, ok := n.Values[i].(*ast.CallExpr)
						if !ok {
							continue
						}
						sel, _ := call.Fun.(*ast.SelectorExpr)
						if sel == nil {
							continue
						}
						pkgID, _ := sel.X.(*ast.Ident)
						if pkgID == nil || (pkgID.Name != "errors" && pkgID.Name != "outcome") {
							continue
						}
						found[id.Name] = pkgID.Name == "outcome"
					}
				case *ast.TypeSpec:
					if n.Name.IsExported() && strings.HasSuffix(n.Name.Name, "Error") {
						found[n.Name.Name] = true
					}
				}
				return true
			})
		}
	}
	if len(found) == 0 {
		t.Fatalf("no errors found in %s: the scan is broken", dir)
	}
	return found
}
