package gateway

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// renderResult renders an applied write's answer by hand rather than with
// encoding/json: it runs on every accepted write, its shape is fixed, and
// reflection would cost allocations that this does not. Rows are the JSON
// PostgreSQL built (json_agg), copied as they are.
func renderResult(res Result) ([]byte, error) {
	n := 96 + len(res.Operation) + len(res.Resource)
	for _, st := range res.Statements {
		n += 40 + len(st.Rows)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"operation":`...)
	b = appendJSONString(b, res.Operation)
	b = append(b, `,"resource":`...)
	b = appendJSONString(b, res.Resource)
	b = append(b, `,"token":"`...)
	b, _ = res.Token.AppendText(b)
	b = append(b, `","statements":[`...)
	for i, st := range res.Statements {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"rows_affected":`...)
		b = strconv.AppendInt(b, st.RowsAffected, 10)
		if len(st.Rows) > 0 {
			b = append(b, `,"rows":`...)
			b = appendCompact(b, st.Rows)
		}
		b = append(b, '}')
	}
	return append(b, "]}\n"...), nil
}

// appendCompact appends JSON from PostgreSQL on one line: json_agg puts
// a newline between rows, which would split the answer over lines.
func appendCompact(b, raw []byte) []byte {
	if bytes.IndexByte(raw, '\n') < 0 {
		return append(b, raw...)
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return append(b[:len(b):len(b)], raw...) // not JSON after all: as it came
	}
	return buf.Bytes()
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string: quote, backslash and
// control characters escaped, invalid UTF-8 replaced by U+FFFD, as
// encoding/json does (FuzzAppendJSONString holds it to that).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
