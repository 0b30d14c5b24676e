package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeBatch(t *testing.T) {
	items, err := DecodeBatch([]byte(` {"writes": [
		{"operation": "debit", "args": {"account": "a", "n": 1}, "token": "1:42"},
		{"token": {"from": "1:42", "to": "1:57"}, "operation": "transfer", "args": {}}
	]} `), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].Operation != "debit" || string(items[0].Args) != `{"account": "a", "n": 1}` || items[0].Token != "1:42" ||
		items[1].Operation != "transfer" || len(items[1].RoleTokens) != 2 || items[1].RoleTokens[1] != (RoleToken{"to", "1:57"}) {
		t.Fatalf("items = %+v", items)
	}
	for _, tt := range []struct{ name, body, arg string }{
		{"not an object", `[]`, ""},
		{"unknown key", `{"writes": [], "atomic": true}`, "atomic"},
		{"writes twice", `{"writes": [], "writes": []}`, "writes"},
		{"no writes", `{"writes": []}`, "writes"},
		{"missing writes", `{}`, "writes"},
		{"too many", `{"writes": [` + strings.Repeat(`{"operation": "a", "args": {}, "token": "1:1"},`, 10) + `{"operation": "a", "args": {}, "token": "1:1"}]}`, "writes"},
		{"unknown write key", `{"writes": [{"operation": "a", "args": {}, "token": "1:1", "resource": "x"}]}`, "writes[0].resource"},
		{"operation twice", `{"writes": [{"operation": "a", "operation": "b", "args": {}, "token": "1:1"}]}`, "writes[0].operation"},
		{"missing token", `{"writes": [{"operation": "a", "args": {}}]}`, "writes[0].token"},
		{"args not an object", `{"writes": [{"operation": "a", "args": [1], "token": "1:1"}]}`, "writes[0].args"},
		{"operation not a string", `{"writes": [{"operation": 1, "args": {}, "token": "1:1"}]}`, "writes[0].operation"},
		{"role twice", `{"writes": [{"operation": "a", "args": {}, "token": {"r": "1:1", "r": "1:2"}}]}`, "writes[0].token.r"},
		{"token a number", `{"writes": [{"operation": "a", "args": {}, "token": 1}]}`, "writes[0].token"},
		{"empty role tokens", `{"writes": [{"operation": "a", "args": {}, "token": {}}]}`, "writes[0].token"},
		{"trailing data", `{"writes": [{"operation": "a", "args": {}, "token": "1:1"}]} x`, ""},
		{"deep args", `{"writes": [{"operation": "a", "args": {"a": [[[[[[1]]]]]]}, "token": "1:1"}]}`, ""},
		{"invalid UTF-8 name", "{\"writes\": [{\"operation\": \"a\xff\", \"args\": {}, \"token\": \"1:1\"}]}", "writes[0].operation"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeBatch([]byte(tt.body), 10)
			var ae *ArgError
			if !errors.As(err, &ae) || ae.Arg != tt.arg {
				t.Fatalf("DecodeBatch = %v, want an *ArgError about %q", err, tt.arg)
			}
		})
	}
}

// FuzzDecodeBatch: the batch decoder never panics, refuses only with
// *ArgError, and what it accepts is valid JSON whose writes' arguments
// are JSON objects, as encoding/json reads them.
func FuzzDecodeBatch(f *testing.F) {
	for _, s := range []string{
		`{"writes": [{"operation": "debit", "args": {"a": 1}, "token": "1:42"}]}`,
		`{"writes": [{"operation": "t", "args": {"x": "y"}, "token": {"from": "1:1", "to": "1:2"}}]}`,
		`{"writes": [{"operation": "t", "args": {"x": [1, {"y": null}]}, "token": "1:1"}, {"operation": "u", "args": {}, "token": "2:2"}]}`,
		`{"writes": []}`, `{"writes": [{}]}`, `{"writes": [1]}`, `{"writes": [{"args": {"\u00e9": true}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := DecodeBatch(body, 5)
		if err != nil {
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("DecodeBatch(%q) = %v, not an *ArgError", body, err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("DecodeBatch accepted invalid JSON %q", body)
		}
		var doc struct {
			Writes []struct {
				Operation string          `json:"operation"`
				Args      json.RawMessage `json:"args"`
			} `json:"writes"`
		}
		if err := json.Unmarshal(body, &doc); err != nil || len(doc.Writes) != len(items) || len(items) == 0 || len(items) > 5 {
			t.Fatalf("%q: encoding/json reads %+v, %v; DecodeBatch %d writes", body, doc, err, len(items))
		}
		for i, it := range items {
			var args map[string]any
			if err := json.Unmarshal(it.Args, &args); err != nil || args == nil {
				t.Fatalf("%q: write %d's args %q are not a JSON object: %v", body, i, it.Args, err)
			}
			if it.Operation != doc.Writes[i].Operation {
				t.Fatalf("%q: write %d's operation %q, encoding/json reads %q", body, i, it.Operation, doc.Writes[i].Operation)
			}
		}
	})
}
