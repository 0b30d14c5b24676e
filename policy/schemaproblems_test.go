package policy

import (
	"errors"
	"strings"
	"testing"
)

// schemaBase is a valid policy the cases below break one edit at a time.
const schemaBase = `kinds:
  account:
    template: "account/{account}"
operations:
  debit:
    resource: account
    args:
      account: {type: string}
      amount: {type: integer, min: 1}
    statements:
      - sql: UPDATE a SET b = b - :amount WHERE id = :account
        expect_rows: 1
sql_errors:
  P0001: {status: 409, type: over-reserved}
`

func TestSchemaProblems(t *testing.T) {
	seventeen := strings.Repeat("      - sql: SELECT :amount, :account\n", 17)
	tests := []struct {
		name, old, new string
		entry, msg     string
		shape          bool
	}{
		{"unknown key", "expect_rows: 1", "expect_row: 1",
			"operations.debit.statements[0]", `unknown key "expect_row" (did you mean "expect_rows"?); allowed: expect_rows, sql (line 12)`, true},
		{"wrong enum value", `template: "account/{account}"`, `template: "account/{account}"` + "\n    compare: strictest",
			"kinds.account.compare", `"strictest" is not one of monotonic, strict`, false},
		{"wrong type", "expect_rows: 1", "expect_rows: one",
			"operations.debit.statements[0].expect_rows", `want a whole number, got "one"`, true},
		{"a list for a mapping", "args:\n      account: {type: string}\n      amount: {type: integer, min: 1}", "args: [account, amount]",
			"operations.debit.args", "want a mapping, got a list", true},
		{"an empty entry", "      amount: {type: integer, min: 1}", "      amount:",
			"operations.debit.args.amount", "want a mapping, got nothing", false},
		{"too many statements", "      - sql: UPDATE a SET b = b - :amount WHERE id = :account\n        expect_rows: 1\n", seventeen,
			"operations.debit.statements", "want 1 to 16 items, have 17", false},
		{"bad SQLSTATE", "P0001:", "P001:",
			"sql_errors.P001", "not an SQLSTATE: five upper-case letters or digits", false},
		{"fencegw's SQLSTATE class", "P0001:", "FG001:",
			"sql_errors.FG001", "class FG is fencegw's own", false},
		{"status out of range", "status: 409", "status: 503",
			"sql_errors.P0001.status", "503: want 400 to 499", false},
		{"bad problem type", "type: over-reserved", "type: Over_Reserved",
			"sql_errors.P0001.type", `"Over_Reserved": want lower-case letters, digits and '-'`, false},
		{"bad lock delay", `template: "account/{account}"`, `template: "account/{account}"` + "\n    lock_delay: 5 seconds",
			"kinds.account.lock_delay", `"5 seconds": want a duration from 0s to 5m`, false},
		{"bad template", `template: "account/{account}"`, `template: "account/{Account}"`,
			"kinds.account.template", "want a template", false},
		{"missing template", `    template: "account/{account}"`, `    compare: strict`,
			"kinds.account", "missing template: the names of the kind's resources, e.g. template: account/{account} (line 2)", false},
		{"template and key", `    template: "account/{account}"`, `    template: "account/{account}"` + "\n    key: \"account/{account}\"",
			"kinds.account", "the template is given twice", false},
		{"kinds and resources", "operations:", "resources: {}\noperations:",
			"", "the kinds are declared twice", false},
		{"access and kind", "    resource: account", "    resource: account\n    access: read\n    kind: read",
			"operations.debit", "the access is given twice", false},
		{"resource and resources", "    resource: account", "    resource: account\n    resources: {from: \"account/{account}\"}",
			"operations.debit", "name the resource the operation writes under", false},
		{"neither resource nor resources", "    resource: account\n", "",
			"operations.debit", "name the resource the operation writes under", false},
		{"bad operation name", "  debit:", "  Debit:",
			"operations.Debit", "operation names are lower-case letters", false},
		{"reserved operation name", "  debit:", "  batch:",
			"operations.batch", `"batch" is reserved`, false},
		{"max_length on an integer", "{type: integer, min: 1}", "{type: integer, max_length: 3}",
			"operations.debit.args.amount.max_length", "max_length and pattern apply to strings only", false},
		{"bad argument type", "{type: integer, min: 1}", "{type: int}",
			"operations.debit.args.amount.type", `"int" is not one of string, integer, boolean`, false},
		{"group commit without coalesce", `template: "account/{account}"`, `template: "account/{account}"` + "\n    coalesce: false\n    group_commit: true",
			"kinds.account.group_commit", "group commit needs coalesce", false},
		{"bad token", "sql_errors:", "clients:\n  billing: {token_sha256: abc, operations: [debit]}\nsql_errors:",
			"clients.billing.token_sha256", `"abc": want the 64 hex digits`, false},
		{"catalog table", "sql_errors:", "guarded_tables:\n  pg_catalog.pg_class: {resource: account}\nsql_errors:",
			"guarded_tables.pg_catalog.pg_class", "not an application's to guard", false},
		{"a list for the policy", schemaBase, "- resources\n- operations\n",
			"", "want a mapping, got a list", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(schemaBase, tt.old) {
				t.Fatalf("the base policy has no %q", tt.old)
			}
			src := strings.Replace(schemaBase, tt.old, tt.new, 1)
			ps := schemaProblems([]byte(src))
			for _, p := range ps {
				if p.Entry == tt.entry && strings.Contains(p.Message, tt.msg) {
					if p.shape != tt.shape {
						t.Errorf("%s: shape = %t, want %t", p.Entry, p.shape, tt.shape)
					}
					return
				}
			}
			t.Errorf("problems %v; want %s: %s", ps, tt.entry, tt.msg)
		})
	}
}

// TestSchemaReadsAsTheLoaderDoes: spellings the loader accepts are no
// schema problems, however YAML types them.
func TestSchemaReadsAsTheLoaderDoes(t *testing.T) {
	tests := []struct{ name, old, new string }{
		{"an unquoted number as text", `template: "account/{account}"`, `template: "account/{account}"` + "\n    lock_delay: 0"},
		{"YAML 1.1 booleans", `template: "account/{account}"`, `template: "account/{account}"` + "\n    coalesce: yes\n    group_commit: off"},
		{"null as absent", `template: "account/{account}"`, `template: "account/{account}"` + "\n    compare: ~\n    validation:"},
		{"empty text as absent", "    resource: account", "    resource: \"\"\n    resources: {from: \"account/{account}\"}"},
		{"a fraction where a whole number goes", "expect_rows: 1", "expect_rows: 1.0"},
		{"an unquoted SQLSTATE", "P0001:", "23514:"},
		{"an all-digit token", "sql_errors:", "clients:\n  c: {token_sha256: " + strings.Repeat("1", 64) + ", operations: ['*']}\nsql_errors:"},
		{"anchors and merge keys", "      amount: {type: integer, min: 1}", "      amount: &int {type: integer, min: 1}\n      other: {<<: *int, max: 5}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(schemaBase, tt.old, tt.new, 1)
			if ps := schemaProblems([]byte(src)); len(ps) > 0 {
				t.Errorf("schema problems %v in\n%s", ps, src)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	if _, err := Check("base.yaml", []byte(schemaBase)); err != nil {
		t.Fatalf("Check(base) = %v", err)
	}
	tests := []struct {
		name, src string
		want      []string // each a problem, entry: message prefix
		notWant   []string
	}{
		{
			// Mistakes of shape stop the check: the compiler's problem
			// (an undeclared argument) waits for them to be fixed.
			name:    "shape first",
			src:     strings.NewReplacer("expect_rows: 1", "expect_row: 1", ":account", ":acount").Replace(schemaBase),
			want:    []string{`operations.debit.statements[0]: unknown key "expect_row"`},
			notWant: []string{"not a declared argument"},
		},
		{
			// Otherwise the compiler speaks for an entry it names, and the
			// schema adds what the compiler did not reach (the type of an
			// sql_errors entry whose status is already wrong).
			name: "compiler and schema",
			src:  strings.NewReplacer("status: 409, type: over-reserved", "status: 503, type: Over", "WHERE id = :account", "WHERE id = :acount").Replace(schemaBase),
			want: []string{
				"operations.debit.statements[0].sql: parameter :acount is not a declared argument",
				"sql_errors.P0001.status: 503: want 400 to 499",
				`sql_errors.P0001.type: "Over": want lower-case letters`,
			},
		},
		{
			name: "not YAML",
			src:  "kinds: [",
			want: []string{"not valid YAML"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Check("p.yaml", []byte(tt.src))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Check = %v, want a *Error", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check:\n%v\nwant %q", err, w)
				}
			}
			for _, nw := range tt.notWant {
				if strings.Contains(err.Error(), nw) {
					t.Errorf("Check:\n%v\nwant no %q", err, nw)
				}
			}
			seen := map[string]bool{}
			for _, p := range pe.Problems {
				if seen[p.Entry] && p.Entry != "" {
					t.Errorf("entry %s reported twice:\n%v", p.Entry, err)
				}
				seen[p.Entry] = true
			}
		})
	}
}
