package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/tokens"
)

func TestDecodeArgs(t *testing.T) {
	p := mustParse(t, goodPolicy)
	debit, run := p.Operations["debit"], p.Operations["run"]
	tests := []struct {
		name string
		op   *Operation
		body string
		want Values // in Args order (sorted by name)
		arg  string // the argument the error must name
		err  string
	}{
		{name: "ok", op: debit, body: `{"account":"acct-1","amount":100}`, want: Values{"acct-1", int64(100)}},
		{name: "order free, whitespace", op: debit, body: " {\"amount\": 5 ,\n \"account\": \"acct-2\"} ", want: Values{"acct-2", int64(5)}},
		{name: "all types", op: run, body: `{"day":"2026-10-18","n":-3,"dry":true}`, want: Values{"2026-10-18", true, int64(-3)}},
		{name: "missing", op: debit, body: `{"account":"acct-1"}`, arg: "amount", err: "missing"},
		{name: "unknown", op: debit, body: `{"account":"acct-1","amount":1,"sql":"DROP"}`, arg: "sql", err: "unknown argument"},
		{name: "duplicate", op: debit, body: `{"account":"acct-1","amount":1,"amount":2}`, arg: "amount", err: "more than once"},
		{name: "string for int", op: debit, body: `{"account":"acct-1","amount":"100"}`, arg: "amount", err: "want an integer, got a string"},
		{name: "float", op: debit, body: `{"account":"acct-1","amount":1.5}`, arg: "amount", err: "within 64 bits"},
		{name: "exponent", op: debit, body: `{"account":"acct-1","amount":1e2}`, arg: "amount", err: "within 64 bits"},
		{name: "int overflow", op: run, body: `{"day":"d","n":9223372036854775808,"dry":false}`, arg: "n", err: "within 64 bits"},
		{name: "below min", op: debit, body: `{"account":"acct-1","amount":0}`, arg: "amount", err: "out of range [1, 1000]"},
		{name: "above max", op: debit, body: `{"account":"acct-1","amount":1001}`, arg: "amount", err: "out of range"},
		{name: "null", op: debit, body: `{"account":null,"amount":1}`, arg: "account", err: "got null"},
		{name: "object", op: debit, body: `{"account":{"a":1},"amount":1}`, arg: "account", err: "an object or array"},
		{name: "bool for string", op: debit, body: `{"account":true,"amount":1}`, arg: "account", err: "got a boolean"},
		{name: "number for bool", op: run, body: `{"day":"d","n":1,"dry":1}`, arg: "dry", err: "want a boolean"},
		{name: "too long", op: debit, body: `{"account":"acct-123456789","amount":1}`, arg: "account", err: "longer than 8"},
		{name: "pattern", op: debit, body: `{"account":"bob","amount":1}`, arg: "account", err: "pattern"},
		{name: "pattern is anchored", op: debit, body: `{"account":"xacct-1","amount":1}`, arg: "account", err: "pattern"},
		{name: "NUL byte", op: run, body: `{"day":"a\u0000b","n":1,"dry":true}`, arg: "day", err: "NUL"},
		{name: "array body", op: debit, body: `["acct-1",1]`, err: "JSON object"},
		{name: "empty body", op: debit, body: ``, err: "JSON object"},
		{name: "trailing data", op: debit, body: `{"account":"acct-1","amount":1} {}`, err: "after the JSON object"},
		{name: "truncated", op: debit, body: `{"account":"acct-1","amount":1`, err: "malformed JSON"},
		{name: "trailing comma", op: debit, body: `{"account":"acct-1","amount":1,}`, err: "malformed JSON"},
		{name: "escapes decoded", op: run, body: `{"day":"\u0032\u00e9\ud83d\ude00\t","n":1,"dry":false}`, want: Values{"2é😀\t", false, int64(1)}},
		{name: "escaped key", op: debit, body: `{"\u0061ccount":"acct-1","amount":1}`, want: Values{"acct-1", int64(1)}},
		{name: "bad escape", op: run, body: `{"day":"\x","n":1,"dry":false}`, err: "malformed JSON"},
		{name: "raw newline in string", op: run, body: "{\"day\":\"a\nb\",\"n\":1,\"dry\":false}", err: "malformed JSON"},
		{name: "leading zero", op: run, body: `{"day":"d","n":01,"dry":false}`, err: "malformed JSON"},
		{name: "bare minus", op: debit, body: `{"account":"acct-1","amount":-}`, err: "malformed JSON"},
		{name: "truncated literal", op: run, body: `{"day":"d","n":1,"dry":tru}`, err: "malformed JSON"},
		{name: "missing colon", op: debit, body: `{"account" "acct-1"}`, err: "malformed JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.op.DecodeArgs([]byte(tt.body))
			if tt.err == "" {
				if err != nil || !slices.Equal(got, tt.want) {
					t.Fatalf("DecodeArgs(%s) = %v, %v; want %v", tt.body, got, err, tt.want)
				}
				return
			}
			var ae *ArgError
			if !errors.As(err, &ae) || !errors.Is(err, ErrBadArgs) {
				t.Fatalf("DecodeArgs(%s) = %v, %v; want *ArgError", tt.body, got, err)
			}
			if ae.Arg != tt.arg || !strings.Contains(ae.Problem, tt.err) {
				t.Fatalf("DecodeArgs(%s) error = %q on %q; want %q on %q", tt.body, ae.Problem, ae.Arg, tt.err, tt.arg)
			}
		})
	}
}

func TestResourceKeyAndBind(t *testing.T) {
	p := mustParse(t, goodPolicy)
	run := p.Operations["run"]
	vals, err := run.DecodeArgs([]byte(`{"day":"2026-10-18","n":7,"dry":false}`))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := run.Resources(nil, vals)
	if err != nil || !slices.Equal(keys, []string{"job/2026-10-18/7"}) {
		t.Fatalf("Resources = %q, %v; want [job/2026-10-18/7]", keys, err)
	}

	debit := p.Operations["debit"]
	vals, err = debit.DecodeArgs([]byte(`{"account":"acct-1","amount":5}`))
	if err != nil {
		t.Fatal(err)
	}
	// Signed, as every token the gateway grants: :_token binds E:R only,
	// the signature being a capability that rows must not carry.
	tok := tokens.Token{Epoch: 1, Revision: 42, Sig: tokens.Sig{1, 2, 3}}
	got := debit.Bind(nil, &debit.Statements[1], vals, []string{"account/acct-1"}, []tokens.Token{tok})
	want := []any{"account/acct-1", int64(1), int64(42), "1:42"}
	if !slices.Equal(got, want) {
		t.Fatalf("Bind = %v, want %v", got, want)
	}
}

func TestResourceKeyRefusesBadKeys(t *testing.T) {
	p := mustParse(t, `
kinds:
  doc: {template: "doc/{id}"}
operations:
  touch:
    resource: doc
    args: {id: {type: string, max_length: 1000}}
    statements: [{sql: "UPDATE d SET n = n + 1 WHERE id = :id"}]
`)
	op := p.Operations["touch"]
	for _, id := range []string{strings.Repeat("x", tokens.MaxResourceLen), "a\nb"} {
		vals, err := op.DecodeArgs([]byte(`{"id":"` + strings.ReplaceAll(id, "\n", `\n`) + `"}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := op.Resources(nil, vals); !errors.Is(err, ErrBadArgs) {
			t.Errorf("Resources(%q) = %v, want ErrBadArgs", id, err)
		}
	}
}
