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
	return redactRuns(redactAfterRevision(s))
}

// redactAfterRevision replaces whatever follows "E:R:" or "E:R#P:"
// (digits, colon, digits, a permit perhaps, colon) up to the next quote, comma, semicolon or line end: a
// signature spelled wrongly (standard base64, a stray dot or space inside)
// is still the signature, and its pieces may each be too short for
// redactRuns to see.
func redactAfterRevision(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := tokenPrefixEnd(s, i)
		if j < 0 {
			b.WriteByte(s[i])
			i++
			continue
		}
		b.WriteString(s[i:j])
		k := j
		for k < len(s) && !strings.ContainsRune("\",;\n", rune(s[k])) {
			k++
		}
		if k > j {
			b.WriteString("…")
		}
		i = k
	}
	return b.String()
}

// tokenPrefixEnd is the index just after "digits:digits:" starting at i,
// if one starts there and i does not continue a run of digits, else -1.
func tokenPrefixEnd(s string, i int) int {
	if i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		return -1
	}
	j := i
	for part := 0; part < 2; part++ {
		start := j
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if part == 1 && j > start && j < len(s) && s[j] == '#' { // a permit's: E:R#P:
			j++
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
		}
		if j == start || j >= len(s) || s[j] != ':' {
			return -1
		}
		j++
	}
	return j
}

func redactRuns(s string) string {
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
