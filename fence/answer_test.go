package fence

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// The answer's shape as gateway.Result and BatchResult document it,
// repeated here so that the test decodes with encoding/json what answer
// renders by hand.
type (
	result struct {
		Operation  string            `json:"operation"`
		Resource   string            `json:"resource,omitempty"`
		Token      tokens.Token      `json:"token,omitzero"`
		Fences     []fenceResult     `json:"fences,omitempty"`
		Statements []statementResult `json:"statements"`
	}
	fenceResult struct {
		Role     string       `json:"role"`
		Resource string       `json:"resource"`
		Token    tokens.Token `json:"token"`
	}
	statementResult struct {
		RowsAffected int64           `json:"rows_affected"`
		Rows         json.RawMessage `json:"rows,omitempty"`
	}
	batchResult struct {
		Writes []result `json:"writes"`
	}
)

const answerPolicy = `
kinds:
  account: {template: "account/{account}"}
operations:
  debit:
    resource: account
    args: {account: {type: string}}
    statements: [{sql: "UPDATE a SET n = n - 1 WHERE id = :account"}]
  transfer:
    resources: {from: "account/{from}", to: "account/{to}"}
    args: {from: {type: string}, to: {type: string}}
    statements: [{sql: "UPDATE a SET n = n + 1 WHERE id IN (:from, :to)"}]
`

// TestAnswer decodes the hand-rendered answers with encoding/json: a write
// of one resource, one with roles, and a batch of both.
func TestAnswer(t *testing.T) {
	pol, err := policy.Parse("answer.yaml", []byte(answerPolicy))
	if err != nil {
		t.Fatal(err)
	}
	weird := "account/\"quoted\"\\ \n\x01 é \xff"
	one := Write{Operation: pol.Operations["debit"], Resources: []string{weird},
		Tokens: []tokens.Token{{Epoch: 3, Revision: 9223372036854775807}}}
	two := Write{Operation: pol.Operations["transfer"], Resources: []string{"account/a", "account/b"},
		Tokens: []tokens.Token{{Epoch: 1, Revision: 42}, {Epoch: 1, Revision: 57}}}
	stmts := Result{Statements: []StatementResult{
		{RowsAffected: 1, Rows: []byte("[{\"id\":\"acct-1\"}, \n {\"id\":\"acct-2\"}]")},
		{RowsAffected: 0},
		{RowsAffected: -1, Rows: []byte("[]")},
	}}
	wantStmts := []statementResult{
		{RowsAffected: 1, Rows: json.RawMessage(`[{"id":"acct-1"},{"id":"acct-2"}]`)},
		{RowsAffected: 0},
		{RowsAffected: -1, Rows: json.RawMessage(`[]`)},
	}
	wantOne := result{Operation: "debit", Resource: "account/\"quoted\"\\ \n\x01 é \uFFFD", // what encoding/json makes of invalid UTF-8
		Token: tokens.Token{Epoch: 3, Revision: 9223372036854775807}, Statements: wantStmts}
	wantTwo := result{Operation: "transfer", Fences: []fenceResult{
		{Role: "from", Resource: "account/a", Token: tokens.Token{Epoch: 1, Revision: 42}},
		{Role: "to", Resource: "account/b", Token: tokens.Token{Epoch: 1, Revision: 57}},
	}, Statements: wantStmts}

	for _, tt := range []struct {
		name   string
		writes []Write
		want   any
	}{
		{"one resource", []Write{one}, &wantOne},
		{"roles", []Write{two}, &wantTwo},
		{"batch", []Write{one, two}, &batchResult{Writes: []result{wantOne, wantTwo}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			results := make([]Result, len(tt.writes))
			for i := range results {
				results[i] = stmts
			}
			resp := answer(&Request{Writes: tt.writes}, results)
			b := resp.Body
			if resp.Status != http.StatusOK || b[len(b)-1] != '\n' || strings.Count(string(b), "\n") != 1 {
				t.Errorf("%d %q: want 200 and one line (json_agg's newlines compacted away), ending with a newline", resp.Status, b)
			}
			got := reflect.New(reflect.TypeOf(tt.want).Elem()).Interface()
			if err := json.Unmarshal(b, got); err != nil {
				t.Fatalf("%q: %v", b, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decoded %+v\nwant    %+v", got, tt.want)
			}
		})
	}
}

// FuzzAppendJSONString holds appendJSONString to encoding/json: the output
// is valid JSON and decodes to what encoding/json's own encoding decodes to.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "account/acct-1", "\"\\/\b\f\n\r\t", "\x00\x1f\x7f", "é\u2028\U0001F600", "\xff\xfe", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ours := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(ours, &got); err != nil {
			t.Fatalf("%q rendered as invalid JSON %q: %v", s, ours, err)
		}
		theirs, _ := json.Marshal(s)
		var want string
		_ = json.Unmarshal(theirs, &want)
		if got != want {
			t.Fatalf("%q: decoded %q, encoding/json gives %q", s, got, want)
		}
	})
}

func BenchmarkAnswer(b *testing.B) {
	pol, err := policy.Parse("answer.yaml", []byte(answerPolicy))
	if err != nil {
		b.Fatal(err)
	}
	req := &Request{Writes: []Write{{Operation: pol.Operations["debit"], Resources: []string{"account/acct-1"}, Tokens: []tokens.Token{{Epoch: 1, Revision: 4242}}}}}
	results := []Result{{Statements: []StatementResult{{RowsAffected: 1, Rows: []byte(`[{"balance_cents":900}]`)}, {RowsAffected: 1}}}}
	b.ReportAllocs()
	for b.Loop() {
		_ = answer(req, results)
	}
}
