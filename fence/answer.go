// The answer of an applied request, the API's JSON: rendered here, not by
// the gateway, because a keyed request's answer is stored with its writes
// and replayed byte for byte (idempotency.go).

package fence

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// StatusApplied is the status of an applied request's answer, stored with
// its key's answer and replayed with it: the gateway sends it as its HTTP
// status, 200.
const StatusApplied = 200

// answer is an applied request's answer: one Result per write (the API's
// shape, documented by gateway.Result and BatchResult), or for a request
// that lists its writes, {"writes": [...]}. It is fence's because a keyed
// request's answer is stored in the same transaction as its writes, and
// replayed byte for byte. Rendered by hand rather than with encoding/json:
// it runs on every accepted write, its shape is fixed, and reflection
// would cost allocations that this does not. Rows are the JSON PostgreSQL
// built (json_agg), copied as they are.
func answer(req *Request, results []Result) Response {
	n := 16
	for i := range results {
		n += 96 + len(req.Writes[i].Operation.Name)
		for _, k := range req.Writes[i].Resources {
			n += 48 + len(k)
		}
		for _, st := range results[i].Statements {
			n += 40 + len(st.Rows)
		}
	}
	b := make([]byte, 0, n)
	if !req.ListsWrites() {
		b = appendResult(b, &req.Writes[0], results[0])
	} else {
		b = append(b, `{"writes":[`...)
		for i := range results {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendResult(b, &req.Writes[i], results[i])
		}
		b = append(b, "]}"...)
	}
	return Response{Status: StatusApplied, Body: append(b, '\n')}
}

// appendResult appends one write's Result.
func appendResult(b []byte, w *Write, res Result) []byte {
	op := w.Operation
	b = append(b, `{"operation":`...)
	b = appendJSONString(b, op.Name)
	if !op.Named() {
		b = append(b, `,"resource":`...)
		b = appendJSONString(b, w.Resources[0])
		b = append(b, `,"token":"`...)
		b, _ = w.Tokens[0].Unsigned().AppendText(b) // answers may be stored and replayed: no capability in them
		b = append(b, '"')
	} else {
		b = append(b, `,"fences":[`...)
		for i, role := range op.Roles {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"role":`...)
			b = appendJSONString(b, role.Name)
			b = append(b, `,"resource":`...)
			b = appendJSONString(b, w.Resources[i])
			b = append(b, `,"token":"`...)
			b, _ = w.Tokens[i].Unsigned().AppendText(b)
			b = append(b, `"}`...)
		}
		b = append(b, ']')
	}
	b = append(b, `,"statements":[`...)
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
	return append(b, "]}"...)
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
