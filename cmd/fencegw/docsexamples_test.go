package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/internal/harness/markdown"
)

// docPages are the documentation's pages, from this package's folder:
// docs/ and its folders (docs/operations/) among them.
func docPages(t *testing.T) []string {
	t.Helper()
	out := []string{"../../README.md", "../../BENCHMARKS.md", "../../examples/README.md"}
	for _, pattern := range []string{"../../docs/*.md", "../../docs/*/*.md"} {
		docs, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, docs...)
	}
	return out
}

// example is a command line of the documentation: where it is, and the
// words after the program (fencegw, or go run ./cmd/fencegw).
type example struct {
	where string
	args  []string
}

// docExamples are the command lines of page's code blocks that run
// fencegw, continuation lines joined; a line that does not split is an
// error of the page.
func docExamples(t *testing.T, page string) []example {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	for _, block := range markdown.Parse(string(b)).Blocks {
		for i := 0; i < len(block.Lines); i++ {
			line, n := strings.TrimSpace(block.Lines[i]), block.Line+1+i
			for strings.HasSuffix(line, `\`) && i+1 < len(block.Lines) {
				i++
				line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(block.Lines[i])
			}
			where := fmt.Sprintf("%s:%d", strings.TrimPrefix(page, "../../"), n)
			words, err := splitWords(line)
			var args []string
			switch {
			case err != nil && (strings.HasPrefix(line, "fencegw ") || strings.HasPrefix(line, "go run ./cmd/fencegw ")):
				t.Errorf("%s: %v: %s", where, err, line)
				continue
			case len(words) > 1 && words[0] == "fencegw":
				args = words[1:]
			case len(words) > 3 && slices.Equal(words[:3], []string{"go", "run", "./cmd/fencegw"}):
				args = words[3:]
			default:
				continue
			}
			out = append(out, example{where, placeholdersOut(args)})
		}
	}
	return out
}

// placeholdersOut drops what the documentation writes for the reader to
// fill in: "…" for any arguments, [brackets] around optional ones, $(…)
// whose output only the reader's shell knows. After --, the words are
// the command fencegw lock runs, left as they are.
func placeholdersOut(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		a = strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")
		if a == "…" || (strings.HasPrefix(a, "$(") && strings.HasSuffix(a, ")")) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// dryRun is the command tree with every command's work replaced by a
// note of which command would run: cobra still finds the command, parses
// and checks its flags and validates its arguments.
func dryRun() (root *cobra.Command, ran *string) {
	ran = new(string)
	root = rootCommand(io.Discard)
	var stub func(c *cobra.Command)
	stub = func(c *cobra.Command) {
		c.Run = nil
		c.RunE = func(cmd *cobra.Command, _ []string) error {
			*ran = cmd.CommandPath()
			return nil
		}
		for _, sub := range c.Commands() {
			stub(sub)
		}
	}
	stub(root)
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	return root, ran
}

// TestDocsExamplesParse: every fencegw command line the documentation
// shows in a code block is one the real command line takes: the command
// exists, every flag exists and takes the value given, and the
// arguments are what the command wants.
func TestDocsExamplesParse(t *testing.T) {
	count := 0
	for _, page := range docPages(t) {
		for _, ex := range docExamples(t, page) {
			count++
			root, ran := dryRun()
			root.SetArgs(ex.args)
			err := root.ExecuteContext(t.Context())
			switch {
			case err != nil:
				t.Errorf("%s: fencegw %s: %v", ex.where, strings.Join(ex.args, " "), err)
			case *ran == "" && !slices.ContainsFunc(ex.args, func(a string) bool { return a == "--help" || a == "--version" }):
				t.Errorf("%s: fencegw %s: no command ran", ex.where, strings.Join(ex.args, " "))
			}
		}
	}
	if count < 30 {
		t.Fatalf("only %d command lines found in the documentation: the reading no longer finds them", count)
	}
}

// TestDocsExamplesCatchMistakes: the dry run refuses what a reader would
// be refused: an unknown command, verb or flag, a flag's bad value, a
// missing argument.
func TestDocsExamplesCatchMistakes(t *testing.T) {
	for _, args := range [][]string{
		{"servee"},
		{"keys", "--etcd", "x", "rotat"},
		{"serve", "--no-such-flag"},
		{"lock", "--ttl", "thirty", "a", "--", "true"},
		{"lock"},
		{"dev", "extra"},
	} {
		root, _ := dryRun()
		root.SetArgs(args)
		if err := root.ExecuteContext(t.Context()); err == nil {
			t.Errorf("fencegw %s: taken, want refused", strings.Join(args, " "))
		}
	}
}

// TestDocsInspectExamplesNameTheirBackends: fencegw inspect asks etcd in
// every mode (with --history, who holds the lock now) and exits 1 when
// etcd does not answer; its default, 127.0.0.1:2379, is the reader's etcd
// only by chance. So every inspect the documentation shows names --etcd,
// and the database it reads.
func TestDocsInspectExamplesNameTheirBackends(t *testing.T) {
	count := 0
	for _, page := range docPages(t) {
		for _, ex := range docExamples(t, page) {
			if len(ex.args) == 0 || ex.args[0] != "inspect" || slices.Contains(ex.args, "--help") {
				continue
			}
			count++
			for _, flag := range []string{"--etcd", "--database-url"} {
				if !slices.ContainsFunc(ex.args, func(a string) bool { return a == flag || strings.HasPrefix(a, flag+"=") }) {
					t.Errorf("%s: fencegw %s: no %s", ex.where, strings.Join(ex.args, " "), flag)
				}
			}
		}
	}
	if count == 0 {
		t.Fatal("no fencegw inspect in the documentation: the reading no longer finds them")
	}
}

// TestBenchmarksSayWhereTheirCommandsRun: BENCHMARKS.md's commands run
// only in a checkout (go run ./cmd/fencegw, go test ./sqlfront, and
// fencegw bench reading testdata/bench), so the page says so before its
// first command, where a reader who copies one starts.
func TestBenchmarksSayWhereTheirCommandsRun(t *testing.T) {
	b, err := os.ReadFile("../../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	first := len(page)
	for _, cmd := range []string{"`fencegw bench", "`go run ./", "`go test ./"} {
		if i := strings.Index(page, cmd); i >= 0 {
			first = min(first, i)
		}
	}
	if said := strings.Index(page, "from the repository's root"); said < 0 || said > first {
		t.Errorf("BENCHMARKS.md does not say, before its first command (byte %d), to run them from the repository's root", first)
	}
}
