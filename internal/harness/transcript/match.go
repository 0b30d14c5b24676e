package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Wildcard, in documented output, stands for any text, or for any value
// where it is a whole JSON value ("…", […], {…}).
const Wildcard = "…"

// Matcher compares a session's outputs with their documentation, one
// step after the other, and remembers which revision each documented
// fencing token stood for.
//
// Tokens (E:R, or E:R:SIGNATURE as a lease grants them) are compared by
// their place in the order, not their text: the epoch must be the one
// documented; a signature documented must be there, any signature; and a
// revision may differ from the documented one as long as the session
// keeps to one renaming that preserves the order: the same documented
// revision always stands for the same actual one, and a higher for a
// higher. An etcd revision depends on what else etcd did meanwhile (a
// lease expiring before or after the next request), the order of the
// session's tokens does not.
type Matcher struct {
	revisions map[int64]int64 // documented revision → actual
}

// Match holds one step's output to its documented lines. Without lines,
// the output must be empty. Lines that begin a JSON value are joined and
// compared as JSON: the same keys, the same values; any other lines
// match the output with all runs of blanks and line breaks as one blank.
func (m *Matcher) Match(documented []string, output string) error {
	if m.revisions == nil {
		m.revisions = map[int64]int64{}
	}
	if len(documented) == 0 {
		if strings.TrimSpace(output) != "" {
			return fmt.Errorf("documented to print nothing, printed %q", output)
		}
		return nil
	}
	if first := documented[0]; strings.HasPrefix(first, "{") || strings.HasPrefix(first, "[") {
		return m.matchJSON(strings.Join(documented, ""), output)
	}
	return m.matchText(strings.Join(strings.Fields(strings.Join(documented, " ")), " "), strings.Join(strings.Fields(output), " "), "")
}

func (m *Matcher) matchJSON(documented, output string) error {
	documented = strings.NewReplacer("["+Wildcard+"]", `"`+Wildcard+`"`, "{"+Wildcard+"}", `"`+Wildcard+`"`).Replace(documented)
	want, err := decodeJSON(documented)
	if err != nil {
		return fmt.Errorf("the documented output is not JSON: %w", err)
	}
	got, err := decodeJSON(output)
	if err != nil {
		return fmt.Errorf("printed %q, documented as JSON: %w", output, err)
	}
	return m.matchValue(want, got, "")
}

func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

func (m *Matcher) matchValue(want, got any, path string) error {
	if want == Wildcard {
		return nil
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: printed %v, documented an object", cmpPath(path), got)
		}
		if wk, gk := slices.Sorted(maps.Keys(w)), slices.Sorted(maps.Keys(g)); !slices.Equal(wk, gk) {
			return fmt.Errorf("%s: printed the keys %q, documented %q", cmpPath(path), gk, wk)
		}
		for _, k := range slices.Sorted(maps.Keys(w)) {
			if err := m.matchValue(w[k], g[k], path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: printed %v, documented %d elements", cmpPath(path), got, len(w))
		}
		for i := range w {
			if err := m.matchValue(w[i], g[i], path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case string:
		g, ok := got.(string)
		if !ok {
			return fmt.Errorf("%s: printed %v, documented %q", cmpPath(path), got, w)
		}
		return m.matchText(w, g, path)
	default: // numbers (as written), booleans, null
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return fmt.Errorf("%s: printed %v, documented %v", cmpPath(path), got, want)
		}
	}
	return nil
}

func cmpPath(p string) string {
	if p == "" {
		return "the output"
	}
	return strings.TrimPrefix(p, ".")
}

// tokenRE finds a fencing token in documented text: E:R, and a signature
// of at least 8 characters after it, if any.
var tokenRE = regexp.MustCompile(`\b(\d+):(\d+)(:[A-Za-z0-9_-]{8,})?\b`)

// matchText matches got against documented, whose wildcards match any
// text and whose tokens match any token in the same place of the order.
func (m *Matcher) matchText(documented, got, path string) error {
	var pattern bytes.Buffer
	pattern.WriteString(`^`)
	var revisions []int64 // the documented revision of each token, in order
	var epochs []string
	last := 0
	for _, loc := range tokenRE.FindAllStringSubmatchIndex(documented, -1) {
		pattern.WriteString(literal(documented[last:loc[0]]))
		epochs = append(epochs, documented[loc[2]:loc[3]])
		r, err := strconv.ParseInt(documented[loc[4]:loc[5]], 10, 64)
		if err != nil {
			return fmt.Errorf("%s: documented token %q: %w", cmpPath(path), documented[loc[0]:loc[1]], err)
		}
		revisions = append(revisions, r)
		pattern.WriteString(`(\d+):(\d+)`)
		if loc[6] >= 0 {
			pattern.WriteString(`:[A-Za-z0-9_-]+`)
		}
		last = loc[1]
	}
	pattern.WriteString(literal(documented[last:]) + `$`)
	re, err := regexp.Compile(pattern.String())
	if err != nil {
		return fmt.Errorf("%s: %w", cmpPath(path), err)
	}
	sub := re.FindStringSubmatch(got)
	if sub == nil {
		return fmt.Errorf("%s: printed %q, documented %q", cmpPath(path), got, documented)
	}
	for i, r := range revisions {
		if sub[1+2*i] != epochs[i] {
			return fmt.Errorf("%s: printed epoch %s, documented %s, in %q", cmpPath(path), sub[1+2*i], epochs[i], got)
		}
		actual, err := strconv.ParseInt(sub[2+2*i], 10, 64)
		if err != nil {
			return fmt.Errorf("%s: printed revision %q: %w", cmpPath(path), sub[2+2*i], err)
		}
		if err := m.bind(r, actual); err != nil {
			return fmt.Errorf("%s: %w, in %q", cmpPath(path), err, got)
		}
	}
	return nil
}

// literal is text as a pattern, its wildcards matching anything.
func literal(text string) string {
	parts := strings.Split(text, Wildcard)
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return strings.Join(parts, `(?s:.*)`)
}

// bind records that the documented revision d stood for the actual a, if
// that keeps the session's renaming one and in order.
func (m *Matcher) bind(d, a int64) error {
	for dd, aa := range m.revisions {
		switch {
		case dd == d && aa != a:
			return fmt.Errorf("revision %d, documented %d, which stood for %d before", a, d, aa)
		case dd != d && aa == a:
			return fmt.Errorf("revision %d stands for both %d and %d as documented", a, dd, d)
		case (dd < d) != (aa < a):
			return fmt.Errorf("revisions %d and %d in the other order than the documented %d and %d", aa, a, dd, d)
		}
	}
	m.revisions[d] = a
	return nil
}
