package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// pflag's words for a value it could not parse end in the Go parser's own
// (strconv.ParseInt: parsing "x": invalid syntax); a user is told instead
// what the flag takes.
var (
	badValue     = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?--([\w-]+)" flag: `)
	badShorthand = regexp.MustCompile(`^unknown shorthand flag: '.' in (-\S+)`)
)

// flagError is every command's answer to a command line pflag refused: a
// usage error, in the user's words.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	if m := badValue.FindStringSubmatch(msg); m != nil {
		if f := cmd.Flags().Lookup(m[2]); f != nil {
			return fmt.Errorf("%w: --%s %q: want %s", errUsage, m[2], m[1], valueKind(f))
		}
	}
	if m := badShorthand.FindStringSubmatch(msg); m != nil {
		word := m[1]
		switch {
		case strings.Trim(word, "-0123456789") == "":
			return fmt.Errorf("%w: %s: a negative number, where only whole numbers of 0 or more are taken", errUsage, word)
		case cmd.Flags().Lookup(word[1:]) != nil:
			return fmt.Errorf("%w: %s: long flags take two dashes: -%s", errUsage, word, word)
		}
	}
	return fmt.Errorf("%w: %w", errUsage, err)
}

// valueKind says what a flag's value must be.
func valueKind(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "int", "int64", "int32", "uint", "uint64":
		return "a whole number"
	case "float64":
		return "a number"
	case "duration":
		return "a duration with its unit, such as 500ms, 10s or 2m"
	case "bool":
		return "true or false"
	}
	return "a " + f.Value.Type()
}
