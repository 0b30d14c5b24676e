package policy

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

const goodPolicy = `
kinds:
  account:
    template: "account/{account}"
  job:
    template: "job/{day}/{n}"
    compare: strict
operations:
  debit:
    resource: account
    args:
      account: {type: string, max_length: 8, pattern: "acct-[0-9]+"}
      amount: {type: integer, min: 1, max: 1000}
    statements:
      - sql: UPDATE a SET b = b - :amount WHERE id = :account AND b >= :amount
        expect_rows: 1
      - sql: INSERT INTO log VALUES (:_resource, :_epoch, :_revision, :_token)
  run:
    resource: job
    args:
      day: {type: string}
      n: {type: integer}
      dry: {type: boolean}
    statements:
      - sql: SELECT :dry AS dry, :day AS day, :n AS n
`

func mustParse(t *testing.T, src string) *Policy {
	t.Helper()
	p, err := Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if d := p.Deprecations(); len(d) > 0 {
		t.Errorf("the test's policy uses former words (words_test.go tests them): %q", d)
	}
	return p
}

func TestReadOperation(t *testing.T) {
	p := mustParse(t, goodPolicy+`  balance:
    access: read
    resource: account
    args:
      account: {type: string, max_length: 8}
    statements:
      - sql: SELECT b FROM a WHERE id = :account
        expect_rows: 1
`)
	if !p.Operations["balance"].Read || p.Operations["debit"].Read {
		t.Fatalf("Read: balance %v, debit %v; want true, false", p.Operations["balance"].Read, p.Operations["debit"].Read)
	}
	if got := p.Operations["balance"].Statements[0].Kind; got != Rows {
		t.Errorf("a read's statement kind = %v, want Rows", got)
	}
}

func TestParseGood(t *testing.T) {
	p := mustParse(t, goodPolicy)
	debit := p.Operations["debit"]
	if debit.Roles[0].Kind.Compare != Monotonic || p.Kinds["job"].Compare != Strict {
		t.Errorf("compare modes: account %v, job %v; want monotonic, strict", debit.Roles[0].Kind.Compare, p.Kinds["job"].Compare)
	}
	if got := debit.Statements[0].Kind; got != Counted {
		t.Errorf("debit statement 0 kind = %v, want Counted", got)
	}
	if got := debit.Statements[1].Kind; got != Plain {
		t.Errorf("debit statement 1 kind = %v, want Plain", got)
	}
	if got := p.Operations["run"].Statements[0].Kind; got != Rows {
		t.Errorf("run statement 0 kind = %v, want Rows", got)
	}
	if !strings.Contains(debit.Statements[0].SQL, "fencegw.expect_rows(count(*), 1, 'debit', 0)") {
		t.Errorf("debit statement 0 SQL does not check expect_rows in the database:\n%s", debit.Statements[0].SQL)
	}
}

func TestDemoPolicyCompiles(t *testing.T) {
	if _, err := Load("../testdata/demo/policy.yaml"); err != nil {
		t.Fatal(err)
	}
}

func TestParseErrorsNameTheEntry(t *testing.T) {
	op := func(body string) string {
		return "kinds:\n  account:\n    template: \"account/{account}\"\noperations:\n  debit:\n" + body
	}
	tests := []struct {
		name, src, entry, msg string
	}{
		{"empty file", "", "", "empty"},
		{"not yaml", "kinds: [", "", "not valid YAML: line 1"},
		{"unknown key", op("    resource: account\n    args: {account: {type: string}}\n    statements: [{sql: 'DELETE FROM t WHERE id = :account', expect_row: 1}]\n"), "", "expect_row"},
		{"no operations", "kinds: {}\n", "operations", "no operations"},
		{"bad compare", "kinds:\n  a:\n    template: a\n    compare: fuzzy\noperations: {}\n", "kinds.a.compare", "fuzzy"},
		{"bad template", "kinds:\n  a:\n    template: \"a/{b\"\noperations: {}\n", "kinds.a.template", "without '}'"},
		{"unknown resource", op("    resource: acct\n    args: {account: {type: string}}\n    statements: [{sql: 'DELETE FROM t WHERE id = :account'}]\n"), "operations.debit.resource", "unknown kind"},
		{"missing key arg", op("    resource: account\n    args: {id: {type: string}}\n    statements: [{sql: 'DELETE FROM t WHERE id = :id'}]\n"), "operations.debit.args", "needs argument \"account\""},
		{"undeclared param", op("    resource: account\n    args: {account: {type: string}}\n    statements: [{sql: 'DELETE FROM t WHERE id = :acount'}]\n"), "operations.debit.statements[0].sql", ":acount is not a declared"},
		{"unused arg", op("    resource: account\n    args: {account: {type: string}, extra: {type: integer}}\n    statements: [{sql: 'DELETE FROM t WHERE id = :account'}]\n"), "operations.debit.args.extra", "never used"},
		{"bad type", op("    resource: account\n    args: {account: {type: text}}\n    statements: [{sql: 'DELETE FROM t WHERE id = :account'}]\n"), "operations.debit.args.account.type", "not a type"},
		{"bad pattern", op("    resource: account\n    args: {account: {type: string, pattern: '('}}\n    statements: [{sql: 'DELETE FROM t WHERE id = :account'}]\n"), "operations.debit.args.account.pattern", "missing closing"},
		{"min above max", op("    resource: account\n    args: {account: {type: string}, n: {type: integer, min: 5, max: 1}}\n    statements: [{sql: 'DELETE FROM t WHERE id = :account AND n = :n'}]\n"), "operations.debit.args.n", "above max"},
		{"no statements", op("    resource: account\n    args: {account: {type: string}}\n    statements: []\n"), "operations.debit.statements", "1 to 16"},
		{"two statements in one", op("    resource: account\n    args: {account: {type: string}}\n    statements: [{sql: 'DELETE FROM t WHERE id = :account; DROP TABLE t'}]\n"), "operations.debit.statements[0].sql", "one SQL statement"},
		{"not a write", op("    resource: account\n    args: {account: {type: string}}\n    statements: [{sql: 'TRUNCATE t, :account'}]\n"), "operations.debit.statements[0].sql", "start with INSERT"},
		{"negative expect", op("    resource: account\n    args: {account: {type: string}}\n    statements: [{sql: 'DELETE FROM t WHERE id = :account', expect_rows: -1}]\n"), "operations.debit.statements[0].expect_rows", "want 0"},
		{"bad op name", "kinds:\n  account:\n    template: \"account/{account}\"\noperations:\n  Debit-Now:\n    resource: account\n    args: {account: {type: string}}\n    statements: [{sql: 'DELETE FROM t WHERE id = :account'}]\n", "operations.Debit-Now", "lower-case"},
		{"coalesce not a boolean", "kinds:\n  a:\n    template: a\n    coalesce: sometimes\noperations: {}\n", "", "sometimes"},
		{"a read that writes", op("    access: read\n    resource: account\n    args: {account: {type: string}}\n    statements: [{sql: 'SELECT 1 FROM t WHERE id = :account'}, {sql: 'UPDATE t SET n = 1 WHERE id = :account'}]\n"), "operations.debit.statements[1].sql", "a read's statements are SELECTs, not UPDATE"},
		{"bad access", op("    access: delete\n    resource: account\n    args: {account: {type: string}}\n    statements: [{sql: 'DELETE FROM t WHERE id = :account'}]\n"), "operations.debit.access", "want write (the default) or read"},
		{"two documents", op("    resource: account\n    args: {account: {type: string}}\n    statements: [{sql: 'DELETE FROM t WHERE id = :account'}]\n---\nx: 1\n"), "", "more than one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(tt.src))
			var pe *Error
			if !errors.As(err, &pe) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse error = %v, want *Error", err)
			}
			for _, p := range pe.Problems {
				if p.Entry == tt.entry && strings.Contains(p.Message, tt.msg) {
					if !strings.Contains(err.Error(), "policy test.yaml") {
						t.Errorf("error %q does not name the file", err)
					}
					return
				}
			}
			t.Fatalf("problems %+v\nwant entry %q with %q", pe.Problems, tt.entry, tt.msg)
		})
	}
}

// TestCoalesceDefaultsOn: coalescing is on unless a resource turns it off
// (BENCHMARKS.md has the measurements behind the default).
func TestCoalesceDefaultsOn(t *testing.T) {
	p := mustParse(t, goodPolicy)
	if !p.Kinds["account"].Coalesce {
		t.Error("account: coalesce off, want on by default")
	}
	off := strings.Replace(goodPolicy, "    compare: strict\n", "    compare: strict\n    coalesce: false\n", 1)
	if mustParse(t, off).Kinds["job"].Coalesce {
		t.Error("job: coalesce on despite coalesce: false")
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml")
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load = %v, want ErrNotExist", err)
	}
}

func TestLoadTooLarge(t *testing.T) {
	_, err := Parse("big.yaml", make([]byte, MaxFileSize+1))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Parse = %v, want ErrInvalid", err)
	}
}

func TestClients(t *testing.T) {
	const billingHash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" // sha256("test")
	src := goodPolicy + `
clients:
  billing:
    token_sha256: ` + billingHash + `
    operations: [debit]
  ops:
    token_sha256: 1b4f0e9851971998e732078544c96b36c3d01cedf7caa332359d6f1d83567014
    operations: ["*"]
`
	p := mustParse(t, src)
	c, ok := p.Authenticate("test")
	if !ok || c.Name != "billing" || !c.MayCall("debit") || c.MayCall("run") {
		t.Fatalf("Authenticate(test) = %+v, %t; want billing, debit only", c, ok)
	}
	if _, ok := p.Authenticate("tesT"); ok {
		t.Fatal("a wrong token authenticated")
	}
	if c, ok := p.Authenticate("test1"); !ok || !c.MayCall("run") {
		t.Fatalf("Authenticate(test1) = %+v, %t; want ops with all operations", c, ok)
	}
	if open := mustParse(t, goodPolicy); open.AuthRequired() {
		t.Fatal("a policy without clients requires authentication")
	}

	for _, tt := range []struct{ name, clients, entry, msg string }{
		{"bad hash", "  a: {token_sha256: abc, operations: [debit]}\n", "clients.a.token_sha256", "64 hex digits"},
		{"unknown op", "  a: {token_sha256: " + billingHash + ", operations: [refund]}\n", "clients.a.operations", "unknown operation"},
		{"no ops", "  a: {token_sha256: " + billingHash + "}\n", "clients.a.operations", "missing"},
		{"same token", "  a: {token_sha256: " + billingHash + ", operations: [debit]}\n  b: {token_sha256: " + billingHash + ", operations: [debit]}\n", "clients.b.token_sha256", "same token as client a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(goodPolicy+"\nclients:\n"+tt.clients))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Parse = %v, want *Error", err)
			}
			for _, p := range pe.Problems {
				if p.Entry == tt.entry && strings.Contains(p.Message, tt.msg) {
					return
				}
			}
			t.Fatalf("problems %+v, want %s: %s", pe.Problems, tt.entry, tt.msg)
		})
	}
}

func TestKindOfAndLockDelay(t *testing.T) {
	p := mustParse(t, strings.Replace(goodPolicy, `template: "account/{account}"`, "template: \"account/{account}\"\n    lock_delay: 3s", 1))
	tests := []struct{ key, want string }{
		{"account/acct-1", "account"},
		{"job/2026-10-18/7", "job"},
		{"account/", ""},
		{"accounts/x", ""},
		{"leader/x", ""},
	}
	for _, tt := range tests {
		got := ""
		if r := p.KindOf(tt.key); r != nil {
			got = r.Name
		}
		if got != tt.want {
			t.Errorf("KindOf(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
	if d := p.Kinds["account"].LockDelay; d != 3*time.Second {
		t.Errorf("lock_delay = %s, want 3s", d)
	}
	_, err := Parse("x.yaml", []byte(strings.Replace(goodPolicy, `template: "account/{account}"`, "template: \"account/{account}\"\n    lock_delay: soon", 1)))
	if err == nil || !strings.Contains(err.Error(), "kinds.account.lock_delay") {
		t.Errorf("bad lock_delay: %v", err)
	}
}
