package fence

import (
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// TestQueuedParametersAreTheirOwn: queueRequest binds every statement's
// parameters into one shared slice; each query must still get exactly its
// own parameters, capped so that no later append reaches them, and params
// must cover them all (else the slice would be allocated again), for lone
// writes, transfers and batches, fenced or not.
func TestQueuedParametersAreTheirOwn(t *testing.T) {
	pol, err := policy.Load("../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write := func(op, body string, toks ...tokens.Token) Write {
		o := pol.Operations[op]
		args, err := o.DecodeArgs([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		keys, err := o.Resources(nil, args)
		if err != nil {
			t.Fatal(err)
		}
		return Write{Operation: o, Args: args, Resources: keys, Tokens: toks}
	}
	t1, t2 := tokens.Token{Epoch: 1, Revision: 7}, tokens.Token{Epoch: 1, Revision: 9}
	debit := func(account string) Write {
		return write("debit", `{"account": "`+account+`", "amount_cents": 5}`, t1)
	}
	transfer := write("transfer", `{"from": "acct-1", "to": "acct-2", "amount_cents": 5}`, t1, t2)
	for name, writes := range map[string][]Write{
		"lone":     {debit("acct-1")},
		"transfer": {transfer},
		"batch":    {debit("acct-1"), debit("acct-3"), transfer},
	} {
		req, err := NewRequest(writes, nil)
		if err != nil {
			t.Fatal(name, err)
		}
		for _, unsafe := range []bool{false, true} {
			var want [][]any
			for i, f := range req.fences {
				if unsafe {
					want = append(want, []any{f.resource, f.token.Epoch, f.token.Revision, i == 0})
				} else {
					want = append(want, []any{f.resource, f.token.Epoch, f.token.Revision, f.strict, i == 0})
				}
			}
			for wi := range req.Writes {
				w := &req.Writes[wi]
				if len(req.Writes) > 1 {
					want = append(want, []any{strings.Join(w.Resources, "\n")})
				}
				for i := range w.Operation.Statements {
					want = append(want, w.Operation.Bind(nil, &w.Operation.Statements[i], w.Args, w.Resources, w.Tokens))
				}
			}
			if len(req.Writes) > 1 {
				want = append(want, []any{strings.Join(req.Resources(), "\n")}) // the scope of work deferred to COMMIT
			}
			b := &pgx.Batch{}
			(&Store{unsafeNoFence: unsafe}).queueRequest(b, req)
			if len(b.QueuedQueries) != len(want) {
				t.Fatalf("%s, unsafe %v: %d queries queued, want %d", name, unsafe, len(b.QueuedQueries), len(want))
			}
			bound := 0
			for i, qq := range b.QueuedQueries {
				if !slices.Equal(qq.Arguments, want[i]) || cap(qq.Arguments) != len(qq.Arguments) {
					t.Errorf("%s, unsafe %v: query %d has %v (capacity %d), want %v", name, unsafe, i, qq.Arguments, cap(qq.Arguments), want[i])
				}
				bound += len(qq.Arguments)
			}
			if bound > req.params() {
				t.Errorf("%s, unsafe %v: %d parameters bound, params() says %d", name, unsafe, bound, req.params())
			}
		}
	}
}
