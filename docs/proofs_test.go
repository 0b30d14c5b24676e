package docs

import (
	"slices"
	"strings"
	"testing"
)

// TestProofsExistBeyondDocs: TestProofsExist's check for the pages
// outside docs/ (the README, BENCHMARKS.md, the examples' README): every
// test they name exists, in the file named right after it, if one is.
func TestProofsExistBeyondDocs(t *testing.T) {
	tests := testFuncs(t)
	checked := 0
	for _, page := range pages(t) {
		if strings.HasPrefix(page, "docs/") {
			continue // TestProofsExist reads those
		}
		text, err := readRepo(page)
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
	if checked == 0 {
		t.Fatal("no test named outside docs/: the pattern no longer reads them")
	}
}
