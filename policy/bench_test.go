package policy

import (
	"testing"

	"github.com/fencegw/fencegw/tokens"
)

func BenchmarkDecodeArgs(b *testing.B) {
	p, err := Load("../testdata/demo/policy.yaml")
	if err != nil {
		b.Fatal(err)
	}
	op := p.Operations["debit"]
	body := []byte(`{"account": "acct-42", "amount_cents": 100}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := op.DecodeArgs(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBind(b *testing.B) {
	p, err := Load("../testdata/demo/policy.yaml")
	if err != nil {
		b.Fatal(err)
	}
	op := p.Operations["debit"]
	vals, err := op.DecodeArgs([]byte(`{"account": "acct-42", "amount_cents": 100}`))
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for i := range op.Statements {
		n += len(op.Statements[i].Params())
	}
	b.ReportAllocs()
	for b.Loop() {
		keys, _ := op.Resources(nil, vals)
		// As the fence package binds: every statement into one slice.
		args := make([]any, 0, n)
		for i := range op.Statements {
			args = op.Bind(args, &op.Statements[i], vals, keys, testTokens)
		}
	}
}

var testTokens = []tokens.Token{{Epoch: 1, Revision: 42}}
