package gateway

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/tokens"
)

// TestRenderResult decodes the hand-rendered answer with encoding/json.
func TestRenderResult(t *testing.T) {
	res := Result{
		Operation: "debit",
		Resource:  "account/\"quoted\"\\ \n\x01 é \xff",
		Token:     tokens.Token{Epoch: 3, Revision: 9223372036854775807},
		Statements: []StatementResult{
			{RowsAffected: 1, Rows: json.RawMessage("[{\"id\":\"acct-1\"}, \n {\"id\":\"acct-2\"}]")},
			{RowsAffected: 0},
			{RowsAffected: -1, Rows: json.RawMessage("[]")},
		},
	}
	b, err := renderResult(res)
	if err != nil {
		t.Fatal(err)
	}
	if b[len(b)-1] != '\n' || strings.Count(string(b), "\n") != 1 {
		t.Errorf("%q: want one line (json_agg's newlines compacted away), ending with a newline", b)
	}
	var got Result
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	want := res
	want.Resource = "account/\"quoted\"\\ \n\x01 é \uFFFD" // what encoding/json makes of invalid UTF-8
	for i := range want.Statements {
		if raw := want.Statements[i].Rows; raw != nil { // compacted on decode
			var v any
			_ = json.Unmarshal(raw, &v)
			want.Statements[i].Rows, _ = json.Marshal(v)
			var g any
			_ = json.Unmarshal(got.Statements[i].Rows, &g)
			got.Statements[i].Rows, _ = json.Marshal(g)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
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

func BenchmarkRenderResult(b *testing.B) {
	res := Result{Operation: "debit", Resource: "account/acct-1", Token: tokens.Token{Epoch: 1, Revision: 4242},
		Statements: []StatementResult{{RowsAffected: 1, Rows: json.RawMessage(`[{"balance_cents":900}]`)}, {RowsAffected: 1}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := renderResult(res); err != nil {
			b.Fatal(err)
		}
	}
}
