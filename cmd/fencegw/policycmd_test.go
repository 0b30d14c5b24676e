package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/policy"
)

func TestPolicySchemaPrintsTheSchema(t *testing.T) {
	var out bytes.Buffer
	if err := execute(context.Background(), &out, "policy", "schema"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), policy.JSONSchema()) {
		t.Errorf("policy schema printed %d bytes, not the schema's %d", out.Len(), len(policy.JSONSchema()))
	}
	if !json.Valid(out.Bytes()) {
		t.Error("policy schema printed invalid JSON")
	}
	if err := execute(context.Background(), &out, "policy", "schema", "extra"); !errors.Is(err, errUsage) {
		t.Errorf("policy schema extra = %v, want a usage error", err)
	}
}

func TestPolicyHelp(t *testing.T) {
	for _, tc := range []struct{ args, want []string }{
		{[]string{"policy", "--help"}, []string{"check", "schema", "openapi"}},
		{[]string{"policy", "check", "--help"}, []string{"fencegw policy check policy.yaml", "JSON Schema"}},
		{[]string{"help", "policy", "schema"}, []string{"yaml-language-server"}},
		{[]string{"policy", "openapi", "-h"}, []string{"OpenAPI 3.1"}},
	} {
		var out bytes.Buffer
		err := execute(t.Context(), &out, tc.args...)
		for _, w := range tc.want {
			if err != nil || !strings.Contains(out.String(), w) {
				t.Errorf("%s = %v, %q; want help with %q", strings.Join(tc.args, " "), err, out.String(), w)
			}
		}
	}
}

// TestPolicyCheckSchemaProblems: a mistake of shape is reported by the
// entry the policy writes and its line, without JSON pointers or Go types.
func TestPolicyCheckSchemaProblems(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	src := `kinds:
  account:
    template: "account/{account}"
    compare: strictest
operations:
  debit:
    resource: account
    args:
      account: {type: string}
    statements:
      - sql: UPDATE demo.accounts SET balance_cents = 0 WHERE id = :account
        expect_row: 1
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	err := execute(context.Background(), &bytes.Buffer{}, "policy", "check", path)
	if err == nil {
		t.Fatal("policy check accepted an unknown key")
	}
	msg := err.Error()
	for _, want := range []string{
		`operations.debit.statements[0]: unknown key "expect_row" (did you mean "expect_rows"?); allowed: expect_rows, sql (line 12)`,
		`kinds.account.compare: "strictest" is not one of monotonic, strict (line 4)`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("policy check:\n%s\nwant %q", msg, want)
		}
	}
	for _, soup := range []string{"/operations/", "#/", "policy.file", "jsonschema"} {
		if strings.Contains(msg, soup) {
			t.Errorf("policy check:\n%s\nspeaks of %q", msg, soup)
		}
	}
}

// TestPolicyOpenAPI: `fencegw policy openapi FILE` prints one JSON
// document, the one the gateway serves for the policy; a broken policy is
// refused with its problems.
func TestPolicyOpenAPI(t *testing.T) {
	var out bytes.Buffer
	if err := execute(context.Background(), &out, "policy", "openapi", "../../testdata/demo/policy.yaml"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	dec := json.NewDecoder(&out)
	if err := dec.Decode(&doc); err != nil || dec.More() {
		t.Fatalf("policy openapi: %v (more: %v)", err, dec.More())
	}
	if doc.OpenAPI != "3.1.0" || doc.Paths["/v1/ops/debit"] == nil {
		t.Errorf("policy openapi: openapi %q, paths %d", doc.OpenAPI, len(doc.Paths))
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("kinds: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := execute(context.Background(), &out, "policy", "openapi", bad); err == nil || !strings.Contains(err.Error(), "operations") {
		t.Errorf("policy openapi of a broken policy = %v, want its problems", err)
	}
}

// TestPolicyCheckNamesFormerWords: a policy in the former words checks
// as the same policy in the current ones, and each former word it uses is
// named once on standard error; a policy in current words has no warning.
func TestPolicyCheckNamesFormerWords(t *testing.T) {
	demo, former := formerDemo(t)
	check := func(src string) (out, stderr string) {
		path := filepath.Join(t.TempDir(), "policy.yaml")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		var o, e bytes.Buffer
		root := rootCommand(&o)
		root.SetErr(&e)
		root.SetArgs([]string{"policy", "check", path})
		if err := root.ExecuteContext(t.Context()); err != nil {
			t.Fatalf("policy check: %v", err)
		}
		return strings.ReplaceAll(o.String(), path, "FILE"), e.String()
	}
	nowOut, nowErr := check(demo)
	oldOut, oldErr := check(former)
	if nowErr != "" {
		t.Errorf("policy check of current words warned: %q", nowErr)
	}
	if oldOut != nowOut {
		t.Errorf("policy check of former words printed\n%s\nwant as of current words\n%s", oldOut, nowOut)
	}
	for _, word := range []string{"resources: is deprecated and goes in 0.3.0: write kinds: instead", "key: is deprecated and goes in 0.3.0: write template: instead"} {
		if n := strings.Count(oldErr, word); n != 1 {
			t.Errorf("policy check of former words: stderr %q names %q %d times, want once", oldErr, word, n)
		}
	}
}

// formerDemo returns the demo policy, and the same spelled in the former
// words (policy/words.go).
func formerDemo(t *testing.T) (demo, former string) {
	t.Helper()
	data, err := os.ReadFile("../../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	demo = string(data)
	former = strings.NewReplacer("\nkinds:\n", "\nresources:\n", "    template: ", "    key: ").Replace(demo)
	if former == demo {
		t.Fatal("the demo policy has no kinds: with a template: to spell the former way")
	}
	return demo, former
}
