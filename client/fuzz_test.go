package client

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzDecodeProblem feeds decodeResponse arbitrary answers. It must never
// panic; a non-200 answer is always exactly one of *ProblemError (the
// status its Status) or *ResponseError; a stale-token problem is a
// *StaleTokenError; and every message is printable and bounded, whatever
// the body holds.
func FuzzDecodeProblem(f *testing.F) {
	const problem = "application/problem+json"
	seeds := []struct {
		status      int
		contentType string
		body        string
	}{
		{409, problem, `{"type":"urn:fencegw:problem:stale-token","title":"Stale fencing token","status":409,"detail":"gateway: stale token 1:2 for account/acct-1: the fence is at 1:4","resource":"account/acct-1","operation":"debit","presented_token":"1:2","current_token":"1:4"}`},
		{409, problem, `{"type":"urn:fencegw:problem:locked","status":409,"resource":"r","current_token":"1:7"}`},
		{404, problem + "; charset=utf-8", `{"type":"urn:fencegw:problem:lease-not-found","status":404}`},
		{503, problem, `{"type":"urn:fencegw:problem:unavailable","detail":"line\nbreak\u0000"}`},
		{400, problem, `{"type":"about:blank"}`},
		{409, problem, `null`},
		{502, "text/html", "<html><h1>502 Bad Gateway</h1></html>"},
		{500, "", ""},
		{200, "application/json", `{"operation":"debit","resource":"account/acct-1","token":"1:4","statements":[{"rows_affected":1,"rows":[{"id":"acct-1","balance_cents":700}]},{"rows_affected":1}]}`},
		{200, "application/json", `{"statements":"no"}`},
	}
	for _, s := range seeds {
		f.Add(s.status, s.contentType, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		h := http.Header{"Content-Type": {contentType}}
		var res Result
		err := decodeResponse(status, h, strings.NewReader(string(body)), http.StatusOK, &res)
		if status == http.StatusOK {
			if err != nil && !errors.Is(err, ErrUnexpectedResponse) {
				t.Fatalf("a 200 failed with %v, not ErrUnexpectedResponse", err)
			}
			return
		}
		if err == nil {
			t.Fatalf("status %d decoded without an error", status)
		}
		var (
			p *ProblemError
			r *ResponseError
			s *StaleTokenError
		)
		isProblem, isResponse := errors.As(err, &p), errors.As(err, &r)
		if isProblem == isResponse {
			t.Fatalf("%#v: want exactly one of *ProblemError and *ResponseError", err)
		}
		if isProblem && p.Status != status {
			t.Fatalf("problem status %d, answer status %d", p.Status, status)
		}
		if isProblem && p.Kind() == "stale-token" && (!errors.As(err, &s) || !errors.Is(err, ErrStaleToken)) {
			t.Fatalf("%#v: a stale-token problem must be a *StaleTokenError and ErrStaleToken", err)
		}
		msg := err.Error()
		if !utf8.ValidString(msg) || len(msg) > 1024 {
			t.Fatalf("message of %d bytes, valid UTF-8 %v: %q", len(msg), utf8.ValidString(msg), msg)
		}
		for _, c := range msg {
			if unicode.IsControl(c) {
				t.Fatalf("message has control character %U: %q", c, msg)
			}
		}
	})
}
