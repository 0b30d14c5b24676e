package gateway

import "strings"

// decodeUnreserved decodes the percent-encoded unreserved characters of an
// escaped path (letters, digits, "-", ".", "_", "~"), which mean the same
// decoded (RFC 3986 §6.2.2.2), and leaves every other escape as it is:
// %2F is not a "/".
func decodeUnreserved(escaped string) string {
	if !strings.Contains(escaped, "%") {
		return escaped
	}
	b := make([]byte, 0, len(escaped))
	for i := 0; i < len(escaped); i++ {
		if c, ok := percentByte(escaped[i:]); ok && isUnreserved(c) {
			b = append(b, c)
			i += 2
			continue
		}
		b = append(b, escaped[i])
	}
	return string(b)
}

// percentByte reads the escape s starts with, if it starts with one: %XX.
func percentByte(s string) (byte, bool) {
	if len(s) < 3 || s[0] != '%' {
		return 0, false
	}
	hi, ok1 := unhex(s[1])
	lo, ok2 := unhex(s[2])
	return hi<<4 | lo, ok1 && ok2
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}
