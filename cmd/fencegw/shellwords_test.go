package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// splitWords splits one shell command line into its words as sh would
// before expansion: blanks separate words, '…' is literal, "…" keeps
// its text with \" \\ \$ \` unescaped, a backslash outside quotes escapes
// the next character, and $(…) is one word however many blanks it holds.
// The command ends at an unquoted comment (# starting a word) or an
// operator (| ; & < >): what follows is another command or a
// redirection. Variables stay as written ("$DATABASE_URL").
func splitWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words = append(words, w.String())
		}
		w.Reset()
		inWord = false
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == ' ' || r == '\t':
			end()
		case r == '#' && !inWord, strings.ContainsRune("|;&<>", r):
			end()
			return words, nil
		case r == '\\':
			if i+1 == len(rs) {
				return nil, errors.New("a backslash ends the line")
			}
			i++
			w.WriteRune(rs[i])
			inWord = true
		case r == '\'':
			j := slices.Index(rs[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("an unterminated '")
			}
			w.WriteString(string(rs[i+1 : i+1+j]))
			i += j + 1
			inWord = true
		case r == '"':
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				if rs[j] == '\\' && j+1 < len(rs) && strings.ContainsRune("\"\\$`", rs[j+1]) {
					j++
				}
				w.WriteRune(rs[j])
			}
			if j == len(rs) {
				return nil, errors.New(`an unterminated "`)
			}
			i = j
			inWord = true
		case r == '$' && i+1 < len(rs) && rs[i+1] == '(':
			depth, j := 0, i+1
			for ; j < len(rs); j++ {
				if rs[j] == '(' {
					depth++
				} else if rs[j] == ')' {
					if depth--; depth == 0 {
						break
					}
				}
			}
			if j == len(rs) {
				return nil, errors.New("an unterminated $(")
			}
			w.WriteString(string(rs[i : j+1]))
			i = j
			inWord = true
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	end()
	return words, nil
}

// TestSplitWords: the quoting the documentation's command lines use.
func TestSplitWords(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{`fencegw migrate --database-url "$DATABASE_URL" up   # the schema`, []string{"fencegw", "migrate", "--database-url", "$DATABASE_URL", "up"}},
		{`fencegw lock a -- sh -c 'curl … -H "X: \"y\""'`, []string{"fencegw", "lock", "a", "--", "sh", "-c", `curl … -H "X: \"y\""`}},
		{`fencegw policy schema > policy.schema.json`, []string{"fencegw", "policy", "schema"}},
		{`fencegw bench --duration 3s $([ $mode = off ] && echo --x) --json > out`, []string{"fencegw", "bench", "--duration", "3s", "$([ $mode = off ] && echo --x)", "--json"}},
		{`fencegw a\ b "c\\d" ''`, []string{"fencegw", "a b", `c\d`, ""}},
		{`fencegw x#y # z`, []string{"fencegw", "x#y"}},
	} {
		got, err := splitWords(tc.line)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
	for _, bad := range []string{`a 'b`, `a "b`, `a $(b`, `a \`} {
		if got, err := splitWords(bad); err == nil {
			t.Errorf("splitWords(%q) = %q, want an error", bad, got)
		}
	}
}

// FuzzSplitWords: any line splits or is refused, never panics; words
// quoted back, one by one, split into the same words.
func FuzzSplitWords(f *testing.F) {
	f.Add(`fencegw serve --etcd "a b" 'c' d\ e $(f g) # h`)
	f.Add(`"\\\"" '' ;`)
	f.Fuzz(func(t *testing.T, line string) {
		words, err := splitWords(line)
		if err != nil {
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		again, err := splitWords(strings.Join(quoted, " "))
		if err != nil || !slices.Equal(again, words) {
			t.Fatalf("%q split into %q; quoted back, into %q, %v", line, words, again, err)
		}
	})
}
