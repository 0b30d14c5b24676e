package client

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// problemTypePrefix starts the type URI of every problem the gateway sends.
const problemTypePrefix = "urn:fencegw:problem:"

// Body limits. An error body beyond maxErrorBody is cut (a problem document
// is well under 1 KiB); a success body beyond maxResultBody is refused, so
// a misbehaving server cannot make the client buffer without bound.
const (
	maxErrorBody  = 64 << 10
	maxResultBody = 32 << 20
)

// problemDoc is the wire form of a problem document.
type problemDoc struct {
	Type           string `json:"type"`
	Title          string `json:"title"`
	Status         int    `json:"status"`
	Detail         string `json:"detail"`
	Resource       string `json:"resource"`
	Operation      string `json:"operation"`
	PresentedToken string `json:"presented_token"`
	CurrentToken   string `json:"current_token"`
	Outcome        string `json:"outcome"`
	Role           string `json:"role"`
	Index          *int   `json:"index"`
}

// decodeResponse reads an answer: with status want, its JSON body into out
// (unless out is nil); with any other status, the error it describes.
func decodeResponse(status int, header http.Header, body io.Reader, want int, out any) error {
	if status != want {
		b, _ := io.ReadAll(io.LimitReader(body, maxErrorBody)) // a cut body fails to decode below
		return decodeError(status, header.Get("Content-Type"), b)
	}
	if out == nil {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(body, maxResultBody+1))
	if err != nil {
		return fmt.Errorf("reading the %d answer: %w", status, err)
	}
	if len(b) > maxResultBody {
		return fmt.Errorf("%w: the %d answer is larger than %d bytes", ErrUnexpectedResponse, status, maxResultBody)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%w: decoding the %d answer: %w", ErrUnexpectedResponse, status, err)
	}
	return nil
}

// decodeError turns an error answer into a *ProblemError (a
// *StaleTokenError or *LockedError for those kinds), or a *ResponseError
// when the body is not a problem document.
func decodeError(status int, contentType string, body []byte) error {
	mt, _, _ := mime.ParseMediaType(contentType)
	var doc problemDoc
	if mt != "application/problem+json" || json.Unmarshal(body, &doc) != nil {
		return &ResponseError{Status: status, ContentType: contentType, Body: printable(string(body), 200)}
	}
	p := &ProblemError{
		Type: doc.Type, Title: doc.Title, Status: status, Detail: doc.Detail,
		Resource: doc.Resource, Operation: doc.Operation,
		PresentedToken: doc.PresentedToken, CurrentToken: doc.CurrentToken, Outcome: doc.Outcome,
		Role: doc.Role, Index: -1,
	}
	if doc.Index != nil {
		p.Index = *doc.Index
	}
	switch p.Kind() {
	case "stale-token":
		return &StaleTokenError{Role: p.Role, Resource: p.Resource, Presented: p.PresentedToken, Current: p.CurrentToken, Problem: p}
	case "locked":
		return &LockedError{Resource: p.Resource, Holder: p.CurrentToken, Problem: p}
	}
	return p
}

// printable makes untrusted text safe for an error message: valid UTF-8,
// no control characters, runs of white space as one space, cut to about
// max bytes.
func printable(s string, max int) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if !unicode.IsPrint(r) {
			r = '?'
		}
		n := utf8.RuneLen(r)
		if space {
			n++
		}
		if b.Len()+n > max {
			b.WriteString("…")
			break
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}
