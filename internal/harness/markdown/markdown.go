// Package markdown reads the parts of the repository's Markdown that its
// tests hold to the code: fenced code blocks, headings with their
// GitHub anchors, and links. It is a leaf helper: it knows Markdown as
// GitHub renders this repository's pages, not CommonMark in full (no
// indented code blocks, no setext headings, no reference-style links).
package markdown

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Block is a fenced code block: its info string's first word (sh, json,
// yaml; "" when none), the line of its opening fence (1-based), and its
// lines without the fences.
type Block struct {
	Lang  string
	Line  int
	Lines []string
}

// Heading is an ATX heading (# to ######) outside code blocks, with the
// anchor GitHub gives it: Slug, made unique within the page by -1, -2…
type Heading struct {
	Level int
	Text  string
	Line  int
	Slug  string
}

// Link is an inline link or image target, outside code blocks and code
// spans, as written (a URL, a path, a path#anchor or #anchor).
type Link struct {
	Target string
	Line   int
}

// Page is a Markdown page read once.
type Page struct {
	Blocks   []Block
	Headings []Heading
	Links    []Link
}

var (
	headingRE  = regexp.MustCompile(`^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$`)
	codeSpanRE = regexp.MustCompile("`+[^`]*`+")
	linkRE     = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
)

// Parse reads text. A fence is a line whose first non-blank characters
// are three backticks; an unclosed block runs to the end of the text.
func Parse(text string) Page {
	var p Page
	var open *Block
	seen := map[string]int{}
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if open == nil {
				lang, _, _ := strings.Cut(strings.TrimSpace(strings.TrimLeft(trimmed, "`")), " ")
				open = &Block{Lang: lang, Line: n}
			} else {
				p.Blocks = append(p.Blocks, *open)
				open = nil
			}
			continue
		}
		if open != nil {
			open.Lines = append(open.Lines, line)
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			// As github-slugger does: a slug taken gets the next free
			// -N of its own count.
			slug, orig := Slug(m[2]), Slug(m[2])
			for _, taken := seen[slug]; taken; _, taken = seen[slug] {
				seen[orig]++
				slug = orig + "-" + strconv.Itoa(seen[orig])
			}
			seen[slug] = 0
			p.Headings = append(p.Headings, Heading{Level: len(m[1]), Text: m[2], Line: n, Slug: slug})
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(line, ""), -1) {
			p.Links = append(p.Links, Link{Target: m[1], Line: n})
		}
	}
	if open != nil {
		p.Blocks = append(p.Blocks, *open)
	}
	return p
}

// Slug is the anchor GitHub gives a heading's text: lower case, letters,
// digits, marks, '_' and '-' kept, spaces turned into '-', anything else
// (punctuation, backticks, symbols) dropped.
func Slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Anchors is the set of anchors a page offers: its headings' slugs.
func (p Page) Anchors() map[string]bool {
	out := make(map[string]bool, len(p.Headings))
	for _, h := range p.Headings {
		out[h.Slug] = true
	}
	return out
}

// Section is the heading whose text is title, and the lines up to the
// next heading of its level or above; ok is false when there is none.
func (p Page) Section(title string) (h Heading, end int, ok bool) {
	for i, x := range p.Headings {
		if x.Text != title {
			continue
		}
		end = -1
		for _, y := range p.Headings[i+1:] {
			if y.Level <= x.Level {
				end = y.Line
				break
			}
		}
		return x, end, true
	}
	return Heading{}, 0, false
}
