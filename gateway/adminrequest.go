package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fencegw/fencegw/internal/clip"
)

// maxReasonBytes bounds an operator's reason: a sentence for the history,
// not a document.
const maxReasonBytes = 500

// adminRequest is the body of an operator's verb: what it acts on, why,
// and whether only to show what it would do.
type adminRequest struct {
	Resource  string
	LeaseID   string
	Reason    string
	DryRun    bool
	KeepFence bool // a revoke only: leave the revoked holder's fence where it is
}

// decodeAdminRequest reads an operator's request as strictly as a lease
// request: a JSON object with at most the keys allowed (of resource,
// lease_id, reason, dry_run, keep_fence), each once, strings where
// strings are due;
// valid UTF-8; nothing after it. The reason is required: a verb that
// changes who may write is recorded with why.
func decodeAdminRequest(body []byte, allowed ...string) (adminRequest, error) {
	var req adminRequest
	bad := func(format string, args ...any) (adminRequest, error) {
		return adminRequest{}, badRequest(format, args...)
	}
	if !utf8.Valid(body) {
		return bad("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return bad(`want a JSON object: {"%s": …, "reason": "…"}`, allowed[0])
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return bad("malformed JSON: %v", err)
		}
		key, _ := t.(string)
		if !slices.Contains(allowed, key) {
			return bad("unknown field %q: want %s", clip.String(key, 32), strings.Join(allowed, ", "))
		}
		if seen[key] {
			return bad("%q given more than once", key)
		}
		seen[key] = true
		if t, err = dec.Token(); err != nil {
			return bad("malformed JSON: %v", err)
		}
		if key == "dry_run" || key == "keep_fence" {
			b, ok := t.(bool)
			if !ok {
				return bad("%s: want true or false", key)
			}
			if key == "dry_run" {
				req.DryRun = b
			} else {
				req.KeepFence = b
			}
			continue
		}
		s, ok := t.(string)
		if !ok || strings.ContainsRune(s, utf8.RuneError) {
			return bad("%s: want a string of valid UTF-8", key)
		}
		switch key {
		case "resource":
			req.Resource = s
		case "lease_id":
			req.LeaseID = s
		case "reason":
			req.Reason = s
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return bad("malformed JSON: the object does not end")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad("something follows the JSON object")
	}
	switch reason := strings.TrimSpace(req.Reason); {
	case reason == "":
		return bad(`reason is required: say why (it is recorded in the lock history with who asked)`)
	case len(req.Reason) > maxReasonBytes:
		return bad("reason: %d bytes, at most %d", len(req.Reason), maxReasonBytes)
	case strings.ContainsFunc(req.Reason, unicode.IsControl):
		return bad("reason: no control characters (line breaks included): it is one line of the history")
	}
	return req, nil
}
