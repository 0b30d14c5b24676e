package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fencegw/fencegw/outcome"
)

var (
	// ErrInvalid is wrapped by *Error: the policy file cannot be used.
	ErrInvalid = errors.New("policy: invalid policy")
	// ErrBadArgs is wrapped by *ArgError: a request's arguments do not match
	// the operation's declaration.
	ErrBadArgs = outcome.New("policy: bad arguments", outcome.Refused)
	// ErrAmbiguousCertificate refuses a client certificate that names
	// more than one client.
	ErrAmbiguousCertificate = errors.New("policy: the client certificate names more than one client")
)

// Problem is one thing wrong with one entry of a policy file.
type Problem struct {
	Entry   string // e.g. operations.debit.statements[0]
	Message string
}

// Error lists every problem found in a policy file, so one run of
// `fencegw policy check` shows them all.
type Error struct {
	File     string
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	noun := "problems"
	if len(e.Problems) == 1 {
		noun = "problem"
	}
	fmt.Fprintf(&b, "policy %s: %d %s", e.File, len(e.Problems), noun)
	for _, p := range e.Problems {
		if p.Entry == "" {
			fmt.Fprintf(&b, "\n  %s", p.Message)
			continue
		}
		fmt.Fprintf(&b, "\n  %s: %s", p.Entry, p.Message)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return ErrInvalid }

// problems collects Problems while compiling.
type problems []Problem

func (ps *problems) add(entry, format string, args ...any) {
	*ps = append(*ps, Problem{Entry: entry, Message: fmt.Sprintf(format, args...)})
}

// ArgError says which argument of a request is wrong and how.
type ArgError struct {
	Arg     string // empty when the body as a whole is wrong
	Problem string
}

func (e *ArgError) Error() string {
	if e.Arg == "" {
		return "policy: bad arguments: " + e.Problem
	}
	return fmt.Sprintf("policy: bad argument %q: %s", e.Arg, e.Problem)
}

func (e *ArgError) Unwrap() error { return ErrBadArgs }

func argErrorf(arg, format string, args ...any) error {
	return &ArgError{Arg: arg, Problem: fmt.Sprintf(format, args...)}
}
