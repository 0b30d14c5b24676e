package main

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestMistypedCommandsAreSuggested: a mistyped command or verb is a usage
// error that names the command meant; a word like none names none.
func TestMistypedCommandsAreSuggested(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"servee"}, "did you mean serve?"},
		{[]string{"migrat"}, "did you mean migrate?"},
		{[]string{"keys", "retir"}, "did you mean retire?"},
		{[]string{"epoch", "bupm"}, "did you mean bump?"},
		{[]string{"xyzzy"}, ""},
	} {
		err := execute(t.Context(), io.Discard, tc.args...)
		switch {
		case !errors.Is(err, errUsage):
			t.Errorf("%q: %v, want a usage error", tc.args, err)
		case tc.want == "" && strings.Contains(err.Error(), "did you mean"):
			t.Errorf("%q: %v, want no suggestion", tc.args, err)
		case tc.want != "" && !strings.Contains(err.Error(), tc.want):
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}
