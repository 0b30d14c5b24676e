package tokens

import "strings"

// minSecretRun is the shortest run of signature characters Redact hides:
// shorter than a signature (22), so one with a few characters cut off or
// stuck on is hidden too, and longer than any epoch or revision spelled
// in letters would be.
const minSecretRun = 16

// Redact returns s with every run of at least minSecretRun base64url
// characters that is not all digits replaced by "…": a token's signature
// makes it a capability, so text that might hold one (a malformed token
// or Fencing-Token header echoed in an error) must not carry it into a
// problem document or the log. Revisions, all digits, stay readable.
func Redact(s string) string {
	var b strings.Builder
	start := -1 // of the current run of base64url characters
	flush := func(end int) {
		run := s[start:end]
		if len(run) >= minSecretRun && strings.IndexFunc(run, notDigit) >= 0 {
			b.WriteString("…")
		} else {
			b.WriteString(run)
		}
		start = -1
	}
	for i := 0; i < len(s); i++ {
		c := rune(s[i])
		if !notBase64URL(c) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			flush(i)
		}
		b.WriteByte(s[i])
	}
	if start >= 0 {
		flush(len(s))
	}
	return b.String()
}

func notDigit(r rune) bool { return r < '0' || r > '9' }
