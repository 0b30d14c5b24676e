package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/tokens"
)

const transferPolicy = `
kinds:
  account:
    template: "account/{account}"
  job:
    template: "job/{day}"
    compare: strict
operations:
  transfer:
    resources:
      from: "account/{from}"
      to: "account/{to}"
    args:
      from: {type: string}
      to: {type: string}
      amount: {type: integer, min: 1}
    statements:
      - sql: UPDATE a SET b = b - :amount WHERE id = :from
        expect_rows: 1
      - sql: UPDATE a SET b = b + :amount WHERE id = :to
        expect_rows: 1
      - sql: INSERT INTO log VALUES (:_resource_from, :_token_from, :_resource_to, :_epoch_to, :_revision_to)
`

func TestRolesCompile(t *testing.T) {
	p := mustParse(t, transferPolicy)
	op := p.Operations["transfer"]
	if !op.Named() || len(op.Roles) != 2 || op.Roles[0].Name != "from" || op.Roles[1].Name != "to" {
		t.Fatalf("roles = %+v, want from and to", op.Roles)
	}
	for _, r := range op.Roles {
		if r.Kind != p.Kinds["account"] {
			t.Errorf("role %s is a %v, want an account: its key has an account's shape", r.Name, r.Kind.Name)
		}
	}
	vals, err := op.DecodeArgs([]byte(`{"from":"a1","to":"a2","amount":5}`))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := op.Resources(nil, vals)
	if err != nil || !slices.Equal(keys, []string{"account/a1", "account/a2"}) {
		t.Fatalf("Resources = %q, %v", keys, err)
	}
	toks := []tokens.Token{{Epoch: 1, Revision: 42, Sig: tokens.Sig{1}}, {Epoch: 1, Revision: 57, Sig: tokens.Sig{2}}} // :_token_from binds E:R only
	got := op.Bind(nil, &op.Statements[2], vals, keys, toks)
	want := []any{"account/a1", "1:42", "account/a2", int64(1), int64(57)}
	if !slices.Equal(got, want) {
		t.Fatalf("Bind = %v, want %v", got, want)
	}
	if i, ok := op.Role("to"); !ok || i != 1 {
		t.Errorf(`Role("to") = %d, %t`, i, ok)
	}
	if _, ok := op.Role("via"); ok {
		t.Error(`Role("via") found`)
	}
	if !strings.Contains(p.Describe(), `operation transfer on roles from "account/{from}" (account), to "account/{to}" (account)`) {
		t.Errorf("Describe does not show the roles:\n%s", p.Describe())
	}
}

func TestRoleErrorsNameTheEntry(t *testing.T) {
	const head = "kinds:\n  account: {template: \"account/{account}\"}\n  acct: {template: \"acct/{id}\"}\n  ledger: {template: \"x/{a}\"}\n  journal: {template: \"x/{b}\"}\noperations:\n  t:\n"
	const args = "    args: {from: {type: string}, to: {type: string}}\n"
	stmt := func(sql string) string { return "    statements: [{sql: '" + sql + "'}]\n" }
	const uses = "UPDATE a SET n = 1 WHERE id IN (:from, :to)"
	tests := []struct{ name, body, entry, msg string }{
		{"both forms", "    resource: account\n    resources: {from: \"account/{from}\"}\n" + args + stmt(uses), "operations.t", "both resource and resources"},
		{"neither", args + stmt(uses), "operations.t.resource", "missing"},
		{"no such shape", "    resources: {from: \"accounts/{from}\", to: \"account/{to}\"}\n" + args + stmt(uses), "operations.t.resources.from", "shape of no kind's template"},
		{"ambiguous shape", "    resources: {from: \"x/{from}\", to: \"account/{to}\"}\n" + args + stmt(uses), "operations.t.resources.from", "kinds journal and ledger"},
		{"same template twice", "    resources: {from: \"account/{from}\", to: \"account/{from}\"}\n" + args + stmt(uses), "operations.t.resources.to", "the same template as role from"},
		{"bad role name", "    resources: {From: \"account/{from}\", to: \"account/{to}\"}\n" + args + stmt(uses), "operations.t.resources.From", "role names"},
		{"undeclared key arg", "    resources: {from: \"account/{src}\", to: \"account/{to}\"}\n" + args + stmt(uses), "operations.t.args", `needs argument "src"`},
		{"builtin without role", "    resources: {from: \"account/{from}\", to: \"account/{to}\"}\n" + args + stmt(uses+" AND t = :_token"), "operations.t.statements[0].sql", "needs a role: this operation has roles from, to"},
		{"builtin of no role", "    resources: {from: \"account/{from}\", to: \"account/{to}\"}\n" + args + stmt(uses+" AND t = :_token_via"), "operations.t.statements[0].sql", "names no role"},
		{"role builtin on one resource", "    resource: account\n    args: {account: {type: string}}\n" + stmt("UPDATE a SET n = 1 WHERE id = :account AND t = :_token_from"), "operations.t.statements[0].sql", "nor a builtin"},
		{"too many roles", "    resources: {" + manyRoles(17) + "}\n    args: {from: {type: string}}\n" + stmt("UPDATE a SET n = 1 WHERE id = :from"), "operations.t.resources", "at most 16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("roles.yaml", []byte(head+tt.body))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Parse = %v, want *Error", err)
			}
			for _, p := range pe.Problems {
				if p.Entry == tt.entry && strings.Contains(p.Message, tt.msg) {
					return
				}
			}
			t.Fatalf("problems %+v\nwant entry %q with %q", pe.Problems, tt.entry, tt.msg)
		})
	}
}

func manyRoles(n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, "r"+strings.Repeat("x", i)+": \"account/{from}\"")
	}
	return strings.Join(parts, ", ")
}
