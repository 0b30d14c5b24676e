// Package clip shortens untrusted text before it goes into an error
// message or a log line: a hostile request must not make either huge.
package clip

import "unicode/utf8"

// String returns s, or its first max bytes (cut back to a whole UTF-8
// character) followed by "…" when it is longer.
func String(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
