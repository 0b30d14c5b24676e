package docs

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/internal/harness/markdown"
)

// pages are the documentation's pages, relative to the repository's root:
// the README, docs/ and its folders, BENCHMARKS.md and the examples' README.
func pages(t *testing.T) []string {
	t.Helper()
	docs := docsPages(t)
	out := []string{"README.md", "BENCHMARKS.md", "examples/README.md"}
	for _, d := range docs {
		out = append(out, "docs/"+d)
	}
	slices.Sort(out)
	return out
}

// docsPages are the pages of docs/ and of its folders (docs/operations/),
// relative to docs/.
func docsPages(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pattern := range []string{"*.md", "*/*.md"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	return out
}

// readRepo reads a file by its path from the repository's root.
func readRepo(name string) ([]byte, error) { return os.ReadFile(filepath.Join("..", name)) }

// TestDocsLinksResolve: every relative link of every page leads to a file
// of the repository and, with an #anchor, to a heading of that page.
func TestDocsLinksResolve(t *testing.T) {
	links := 0
	for _, page := range pages(t) {
		text, err := readRepo(page)
		if err != nil {
			t.Fatal(err)
		}
		problems, n := brokenLinks(page, string(text), readRepo)
		links += n
		for _, p := range problems {
			t.Error(p)
		}
	}
	if links < 50 {
		t.Fatalf("only %d relative links checked: the reading no longer finds them", links)
	}
}

var scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// brokenLinks checks the relative links of page (its path from the
// repository's root) whose text is text, reading other pages with read;
// it returns what is broken, each with its line, and how many it checked.
func brokenLinks(page, text string, read func(string) ([]byte, error)) (problems []string, checked int) {
	anchors := map[string]map[string]bool{page: markdown.Parse(text).Anchors()}
	for _, l := range markdown.Parse(text).Links {
		if scheme.MatchString(l.Target) {
			continue // a URL: not ours to check offline
		}
		checked++
		file, anchor, _ := strings.Cut(l.Target, "#")
		target := page
		if file != "" {
			target = path.Clean(path.Join(path.Dir(page), file))
		}
		where := fmt.Sprintf("%s:%d: %s", page, l.Line, l.Target)
		if strings.HasPrefix(target, "../") || target == ".." {
			problems = append(problems, where+": leads out of the repository")
			continue
		}
		b, err := read(target)
		if err != nil && !isDir(target) {
			problems = append(problems, fmt.Sprintf("%s: no file %s", where, target))
			continue
		}
		if anchor == "" {
			continue
		}
		if !strings.HasSuffix(target, ".md") {
			problems = append(problems, fmt.Sprintf("%s: an anchor into %s, which is no Markdown page", where, target))
			continue
		}
		if anchors[target] == nil {
			anchors[target] = markdown.Parse(string(b)).Anchors()
		}
		if !anchors[target][anchor] {
			problems = append(problems, fmt.Sprintf("%s: %s has no heading #%s", where, target, anchor))
		}
	}
	return problems, checked
}

// isDir says whether target is a folder of the repository (a link to a
// folder, such as deploy/, shows its listing).
func isDir(target string) bool {
	if fi, err := os.Stat(filepath.Join("..", target)); err == nil {
		return fi.IsDir()
	}
	return false
}

// TestBrokenLinksAreFound: the check itself finds each kind of broken
// link, and passes good ones.
func TestBrokenLinksAreFound(t *testing.T) {
	files := map[string]string{
		"docs/a.md": "# A\n## Part two\n",
		"README.md": "# R\n",
	}
	read := func(name string) ([]byte, error) {
		if s, ok := files[name]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}
	for _, tc := range []struct {
		link, want string
	}{
		{"[ok](a.md#part-two)", ""},
		{"[ok](../README.md)", ""},
		{"[ok](#b)", ""},
		{"[ok](https://example.org/x#y)", ""},
		{"[missing](b.md)", "no file docs/b.md"},
		{"[anchor](a.md#part-three)", "has no heading #part-three"},
		{"[self](#nope)", "docs/a.md has no heading #nope"},
		{"[out](../../etc/passwd)", "leads out of the repository"},
	} {
		files["docs/a.md"] = "# A\n## Part two\n## B\n" + tc.link + "\n"
		problems, n := brokenLinks("docs/a.md", files["docs/a.md"], read)
		switch {
		case tc.want == "" && len(problems) > 0:
			t.Errorf("%s: %q, want none", tc.link, problems)
		case tc.want != "" && (len(problems) != 1 || !strings.Contains(problems[0], tc.want)):
			t.Errorf("%s: %q, want %q", tc.link, problems, tc.want)
		case !strings.Contains(tc.link, "https:") && n != 1:
			t.Errorf("%s: %d links checked, want 1", tc.link, n)
		}
	}
}
