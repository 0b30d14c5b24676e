package client

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeError(t *testing.T) {
	const problem = "application/problem+json"
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		want        []error // all of them, errors.Is
		check       func(t *testing.T, err error)
	}{
		{
			name: "stale token", status: 409, contentType: problem,
			body: `{"type":"urn:fencegw:problem:stale-token","title":"Stale fencing token","status":409,
				"detail":"gateway: stale token 1:2 for account/acct-1: the fence is at 1:4",
				"resource":"account/acct-1","operation":"debit","presented_token":"1:2","current_token":"1:4"}`,
			want: []error{ErrStaleToken},
			check: func(t *testing.T, err error) {
				var s *StaleTokenError
				if !errors.As(err, &s) || s.Resource != "account/acct-1" || s.Presented != "1:2" || s.Current != "1:4" {
					t.Fatalf("%#v: want *StaleTokenError{account/acct-1 1:2 1:4}", err)
				}
				p := s.Problem
				if p.Kind() != "stale-token" || p.Status != 409 || p.Operation != "debit" || p.Title != "Stale fencing token" {
					t.Errorf("problem = %+v", p)
				}
				if got, want := err.Error(), "stale token 1:2 for account/acct-1: the fence is at 1:4"; got != want {
					t.Errorf("Error() = %q, want %q", got, want)
				}
			},
		},
		{
			name: "locked", status: 409, contentType: problem + "; charset=utf-8",
			body: `{"type":"urn:fencegw:problem:locked","title":"Resource is locked","status":409,"resource":"account/acct-1","current_token":"1:7"}`,
			want: []error{ErrLocked},
			check: func(t *testing.T, err error) {
				var l *LockedError
				if !errors.As(err, &l) || l.Resource != "account/acct-1" || l.Holder != "1:7" {
					t.Fatalf("%#v: want *LockedError{account/acct-1 1:7}", err)
				}
			},
		},
		{
			name: "lease gone", status: 404, contentType: problem,
			body: `{"type":"urn:fencegw:problem:lease-not-found","title":"Lease not found","status":404,"detail":"keep lease alive: tokens: lease not found"}`,
			want: []error{ErrLeaseLost},
			check: func(t *testing.T, err error) {
				if got, want := err.Error(), "404 lease-not-found: keep lease alive: tokens: lease not found"; got != want {
					t.Errorf("Error() = %q, want %q", got, want)
				}
			},
		},
		{
			name: "unavailable", status: 503, contentType: problem,
			body: `{"type":"urn:fencegw:problem:unavailable","title":"Service unavailable","status":503}`,
			want: []error{ErrUnavailable},
		},
		{
			name: "authority halted", status: 503, contentType: problem,
			body: `{"type":"urn:fencegw:problem:authority-halted","title":"Token authority halted","status":503}`,
			want: []error{ErrAuthorityHalted, ErrUnavailable},
		},
		{
			name: "a kind from a newer gateway", status: 503, contentType: problem,
			body: `{"type":"urn:fencegw:problem:overloaded","title":"Overloaded","status":503}`,
			want: []error{ErrUnavailable},
			check: func(t *testing.T, err error) {
				var p *ProblemError
				if !errors.As(err, &p) || p.Kind() != "overloaded" {
					t.Errorf("%#v: want a *ProblemError of kind overloaded", err)
				}
			},
		},
		{
			name: "another system's problem", status: 400, contentType: problem,
			body: `{"type":"about:blank","title":"Bad Request","status":400}`,
			check: func(t *testing.T, err error) {
				var p *ProblemError
				if !errors.As(err, &p) || p.Kind() != "" || len(p.Unwrap()) != 0 || err.Error() != "400 Bad Request" {
					t.Errorf("%#v (%q): want a kindless *ProblemError", err, err)
				}
			},
		},
		{
			name: "proxy HTML", status: 502, contentType: "text/html",
			body: "<html>\r\n<head><title>502 Bad Gateway</title></head>\n\x00\x1b[31m</html>",
			want: []error{ErrUnexpectedResponse, ErrUnavailable},
			check: func(t *testing.T, err error) {
				var r *ResponseError
				if !errors.As(err, &r) || r.Status != 502 || r.ContentType != "text/html" {
					t.Fatalf("%#v: want *ResponseError 502 text/html", err)
				}
				if got, want := err.Error(), "502 (text/html), not a problem document: <html> <head><title>502 Bad Gateway</title></head> ??[31m</html>"; got != want {
					t.Errorf("Error() = %q, want %q", got, want)
				}
			},
		},
		{
			name: "problem type, broken JSON", status: 409, contentType: problem,
			body: `{"type":"urn:fencegw:problem:stale-token"`,
			want: []error{ErrUnexpectedResponse},
		},
		{
			name: "JSON, wrong content type", status: 409, contentType: "application/json",
			body: `{"type":"urn:fencegw:problem:stale-token","status":409}`,
			want: []error{ErrUnexpectedResponse},
		},
		{
			name: "empty 500", status: 500,
			want: []error{ErrUnexpectedResponse},
			check: func(t *testing.T, err error) {
				if got, want := err.Error(), "500 (no content type), not a problem document"; got != want {
					t.Errorf("Error() = %q, want %q", got, want)
				}
			},
		},
		{
			name: "huge detail", status: 400, contentType: problem,
			body: `{"type":"urn:fencegw:problem:bad-request","detail":"` + strings.Repeat("x", 5000) + `"}`,
			want: []error{ErrBadRequest},
			check: func(t *testing.T, err error) {
				if n := len(err.Error()); n > 600 {
					t.Errorf("Error() is %d bytes, want it cut", n)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := decodeError(tt.status, tt.contentType, []byte(tt.body))
			for _, want := range tt.want {
				if !errors.Is(err, want) {
					t.Errorf("decodeError = %v, want errors.Is %v", err, want)
				}
			}
			if tt.check != nil {
				tt.check(t, err)
			}
		})
	}
}

func TestDecodeResponseBoundsBodies(t *testing.T) {
	// An error body is read up to maxErrorBody: a longer problem is cut and
	// no longer decodes.
	long := `{"type":"urn:fencegw:problem:bad-request","detail":"` + strings.Repeat("x", maxErrorBody) + `"}`
	h := map[string][]string{"Content-Type": {"application/problem+json"}}
	err := decodeResponse(400, h, strings.NewReader(long), 200, nil)
	if !errors.Is(err, ErrUnexpectedResponse) {
		t.Errorf("a problem beyond %d bytes: %v, want ErrUnexpectedResponse", maxErrorBody, err)
	}
	var res Result
	body := `{"operation":"debit","statements":[{"rows_affected":1,"rows":[{"id":"acct-1"}]},{"rows_affected":1}]}`
	if err := decodeResponse(200, nil, strings.NewReader(body), 200, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Statements) != 2 || string(res.Statements[0].Rows) != `[{"id":"acct-1"}]` || res.Statements[1].Rows != nil {
		t.Errorf("Result = %+v", res)
	}
	if err := decodeResponse(200, nil, strings.NewReader("<html>"), 200, &res); !errors.Is(err, ErrUnexpectedResponse) {
		t.Errorf("a 200 that is not JSON: %v, want ErrUnexpectedResponse", err)
	}
}
