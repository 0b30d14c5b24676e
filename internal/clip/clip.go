// Package clip shortens untrusted text before it goes into an error
// message or a log line: a hostile request must not make either huge.
package clip

import "unicode/utf8"

// String returns s, or its first n bytes (cut back to a whole UTF-8
// character) followed by "…" when it is longer. A negative n counts as 0.
func String(s string, n int) string {
	n = max(n, 0)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
