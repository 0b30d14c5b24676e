package markdown

import (
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestSlug: GitHub's anchors for headings of this repository's pages.
func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Five minutes: the GC-pause timeline, refused", "five-minutes-the-gc-pause-timeline-refused"},
		{"Bypass protection: `fencegw guard`", "bypass-protection-fencegw-guard"},
		{"Bounded holds: max_hold, and leases nobody renews", "bounded-holds-max_hold-and-leases-nobody-renews"},
		{"1,000 keep-alive clients, again (issue 4's memory target)", "1000-keep-alive-clients-again-issue-4s-memory-target"},
		{"The sweep: write transactions and pool size (issue 9 §3)", "the-sweep-write-transactions-and-pool-size-issue-9-3"},
		{"Session 9: what GOMAXPROCS=1 changes", "session-9-what-gomaxprocs1-changes"},
		{"Upgrades: migrations and the gateway's functions", "upgrades-migrations-and-the-gateways-functions"},
		{"Café × 2", "café--2"},
	} {
		if got := Slug(tc.heading); got != tc.want {
			t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

// TestParse: blocks with their language and lines, headings with unique
// anchors, links outside code blocks and code spans only.
func TestParse(t *testing.T) {
	text := strings.Join([]string{
		"# Title",                           // 1
		"See [a](a.md#x) and `[b](b.md)`.",  // 2
		"## Part",                           // 3
		"```sh",                             // 4
		"# not a heading [c](c.md)",         // 5
		"fencegw dev",                       // 6
		"```",                               // 7
		"## Part",                           // 8
		"![img](pic.png) [d](<d.md> \"t\")", // 9
		"  ```json",                         // 10
		"{}",                                // 11
	}, "\n")
	p := Parse(text)
	if len(p.Blocks) != 2 || p.Blocks[0].Lang != "sh" || p.Blocks[0].Line != 4 ||
		!slices.Equal(p.Blocks[0].Lines, []string{"# not a heading [c](c.md)", "fencegw dev"}) ||
		p.Blocks[1].Lang != "json" || !slices.Equal(p.Blocks[1].Lines, []string{"{}"}) {
		t.Errorf("blocks %+v", p.Blocks)
	}
	var slugs []string
	for _, h := range p.Headings {
		slugs = append(slugs, h.Slug)
	}
	if want := []string{"title", "part", "part-1"}; !slices.Equal(slugs, want) {
		t.Errorf("slugs %q, want %q", slugs, want)
	}
	var links []string
	for _, l := range p.Links {
		links = append(links, l.Target)
	}
	if want := []string{"a.md#x", "pic.png", "d.md"}; !slices.Equal(links, want) {
		t.Errorf("links %q, want %q", links, want)
	}
	if h, end, ok := p.Section("Part"); !ok || h.Line != 3 || end != 8 {
		t.Errorf("Section(Part) = %+v, %d, %v; want line 3 up to 8", h, end, ok)
	}
	if _, end, ok := p.Section("Title"); !ok || end != -1 {
		t.Errorf("Section(Title) ends at %d, %v; want the page's end", end, ok)
	}
	if _, _, ok := p.Section("None"); ok {
		t.Error("Section(None) found")
	}
}

// FuzzParse: any text parses; blocks hold lines of the text in order,
// anchors use only the characters GitHub keeps, and are unique.
func FuzzParse(f *testing.F) {
	f.Add("# a\n```sh\nx\n```\n[l](t.md#a)")
	f.Add("## `x` (y)\n## `x` (y)\n```\n")
	f.Add("````\n```\n# h\n")
	f.Fuzz(func(t *testing.T, text string) {
		p := Parse(text)
		lines := strings.Split(text, "\n")
		last := 0
		for _, b := range p.Blocks {
			if b.Line <= last || b.Line > len(lines) || b.Line+len(b.Lines) > len(lines) {
				t.Fatalf("block at %d with %d lines, after %d, in %d lines", b.Line, len(b.Lines), last, len(lines))
			}
			if !slices.Equal(b.Lines, lines[b.Line:b.Line+len(b.Lines)]) {
				t.Fatalf("block at %d: lines not the text's", b.Line)
			}
			last = b.Line + len(b.Lines)
		}
		seen := map[string]bool{}
		for _, h := range p.Headings {
			if seen[h.Slug] {
				t.Fatalf("anchor %q twice", h.Slug)
			}
			seen[h.Slug] = true
			for _, r := range h.Slug {
				if r != '-' && r != '_' && !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r) {
					t.Fatalf("anchor %q holds %q", h.Slug, r)
				}
			}
		}
	})
}
