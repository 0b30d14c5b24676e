// Package transcript runs a documented shell session and holds each
// command's output to what the documentation says it prints. It is a leaf
// helper for the tests that keep the README's timeline true.
//
// A session is a script whose comments document it. Right under a
// command, the comment lines indented by at least four blanks after the
// '#' are what the command prints; any other comment is narrative, and a
// command with no such lines must print nothing:
//
//	curl -s $GW/v1/ops/debit -d '{"account": "acct-1"}'
//	#    {"operation":"debit","resource":"account/acct-1","token":"1:7",
//	#     "statements":[…]}
//
// Match says how the documented lines are compared with the output.
package transcript

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Step is one command of a session and what it is documented to print.
type Step struct {
	// Line is the command's first line in the script, from 1.
	Line int
	// Command is the command as written, continuation lines included.
	Command string
	// Output is the documented lines, without the '#' and the indent;
	// none when the command is documented to print nothing.
	Output []string
}

// outputRE is a documented output line: '#' and at least four blanks.
var outputRE = regexp.MustCompile(`^\s*#    `)

// Parse reads a session's steps. A command ends with its line unless the
// line ends with a backslash; a script that ends inside one is an error.
func Parse(script string) ([]Step, error) {
	var steps []Step
	lines := strings.Split(script, "\n")
	documenting := false // the lines before were a command or its output
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			documenting = false
		case strings.HasPrefix(trimmed, "#"):
			if documenting && outputRE.MatchString(line) {
				s := &steps[len(steps)-1]
				s.Output = append(s.Output, strings.TrimSpace(strings.TrimPrefix(trimmed, "#")))
				continue
			}
			documenting = false
		default:
			step := Step{Line: i + 1, Command: line}
			for strings.HasSuffix(strings.TrimRight(line, " \t"), `\`) {
				if i++; i == len(lines) {
					return nil, fmt.Errorf("line %d: the script ends inside a command", step.Line)
				}
				line = lines[i]
				step.Command += "\n" + line
			}
			steps = append(steps, step)
			documenting = true
		}
	}
	return steps, nil
}

// marker separates the output of one step from the next: a record
// separator, a number, another separator, alone on a line.
const marker = "\x1e"

// Instrument returns the script that runs steps in order, all in one
// shell, with their standard error merged into their output, and marks
// where each step's output begins and where the session ended.
func Instrument(steps []Step) string {
	var b strings.Builder
	b.WriteString("exec 2>&1\n")
	for i, s := range steps {
		fmt.Fprintf(&b, "printf '\\n%s%d%s\\n'\n%s\n", marker, i, marker, s.Command)
	}
	fmt.Fprintf(&b, "printf '\\n%send%s\\n'\n", marker, marker)
	return b.String()
}

var markerRE = regexp.MustCompile("\n" + marker + `(\d+|end)` + marker + "\n")

// Split cuts the output of an instrumented script into its n steps'
// outputs, each trimmed of the blank lines around it. A session that
// stopped before its end says during which step.
func Split(output string, n int) ([]string, error) {
	out := make([]string, 0, n)
	marks := markerRE.FindAllStringSubmatchIndex(output, -1)
	for i, m := range marks {
		label := output[m[2]:m[3]]
		if k, _ := strconv.Atoi(label); label == "end" && i == n {
			return out, nil
		} else if label == "end" || k != i || i >= n {
			return nil, fmt.Errorf("the session's marks are out of order: %q where step %d's was due", label, i)
		}
		next := len(output)
		if i+1 < len(marks) {
			next = marks[i+1][0]
		}
		out = append(out, strings.Trim(output[m[1]:next], "\n"))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the session stopped before its first step")
	}
	return nil, fmt.Errorf("the session stopped during step %d of %d", len(out), n)
}
