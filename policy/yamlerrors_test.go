package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/policy"
)

// TestFileMistakesInThePolicysTerms: a mistyped key, a wrong kind of
// value, each its own problem, named by line and in the policy's words
// (the keys allowed where it stands, a near miss), never in Go's.
func TestFileMistakesInThePolicysTerms(t *testing.T) {
	src := `kinds:
  account:
    template: "account/{account}"
    coalesce: maybe
    lock_dely: 1s
operations:
  debit:
    resource: account
    acess: read
    args:
      account: {type: string, max_length: lots}
    statements:
      - sql: UPDATE demo.accounts SET balance_cents = 1 WHERE id = :account
        expect_row: 1
`
	_, err := policy.Parse("p.yaml", []byte(src))
	var perr *policy.Error
	if !errors.As(err, &perr) {
		t.Fatalf("Parse = %v, want *policy.Error", err)
	}
	want := []string{
		"line 4: want true or false, got `maybe`",
		`line 5: unknown key "lock_dely" in a kind (did you mean "lock_delay"?); allowed: template, compare, validation, lock_delay, max_hold, coalesce, group_commit, permits`,
		`line 9: unknown key "acess" in an operation (did you mean "access"?); allowed: access, resource, resources, args, statements`,
		"line 11: want a whole number, got `lots`",
		`line 14: unknown key "expect_row" in a statement (did you mean "expect_rows"?); allowed: sql, expect_rows`,
	}
	if len(perr.Problems) != len(want) {
		t.Fatalf("problems:\n%v\nwant %d", err, len(want))
	}
	for i, w := range want {
		if perr.Problems[i].Message != w {
			t.Errorf("problem %d = %q\nwant        %q", i, perr.Problems[i].Message, w)
		}
	}
	for _, goWord := range []string{"policy.file", "Go struct", "unmarshal", "int64"} {
		if strings.Contains(err.Error(), goWord) {
			t.Errorf("the message speaks Go (%q): %v", goWord, err)
		}
	}
	if !strings.HasPrefix(err.Error(), "policy p.yaml: 5 problems\n") {
		t.Errorf("headline: %q", strings.SplitN(err.Error(), "\n", 2)[0])
	}
}
