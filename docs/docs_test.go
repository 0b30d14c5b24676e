// Package docs holds the documentation; its tests keep the documentation
// true to the code it names.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// testRef is a test named with its file, as docs/security.md names its
// proofs: `TestName` (dir/file_test.go), or several names before one file.
var testRef = regexp.MustCompile("`(Test[A-Za-z0-9_]+)`[^`\n]*?\\(([a-z0-9_/]+_test\\.go)\\)")

// TestProofsExist: every test the documentation names as a proof exists,
// and in the file named right after it, if one is; a proof renamed or
// removed must not leave a claim behind it.
func TestProofsExist(t *testing.T) {
	tests := testFuncs(t)
	checked := 0
	for _, page := range docsPages(t) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range testName.FindAllStringSubmatch(string(text), -1) {
			if _, ok := tests[m[1]]; !ok {
				t.Errorf("%s names %s, which is no test of this repository", page, m[1])
			}
			checked++
		}
		for _, m := range testRef.FindAllStringSubmatch(string(text), -1) {
			name, file := m[1], m[2]
			if files := tests[name]; len(files) > 0 && !slices.Contains(files, file) {
				t.Errorf("%s names %s in %s; it is in %v", page, name, file, files)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d proofs found in docs/: the pattern no longer reads them", checked)
	}
}

var testName = regexp.MustCompile("`(Test[A-Z][A-Za-z0-9_]*)`")

// testFuncs maps each test function of the repository to its files.
func testFuncs(t *testing.T) map[string][]string {
	t.Helper()
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	out := map[string][]string{}
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, "../"))
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			out[m[1]] = append(out[m[1]], rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
