package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/tokens"
)

// checkRole is one resource a check asks about, under its role ("" for
// the single form).
type checkRole struct {
	role, resource string
}

// maxCheckRoles bounds a check's resources, as an operation's roles are.
const maxCheckRoles = 16

// decodeCheckRequest reads the body of POST /v1/fences/check as strictly
// as write arguments: {"resource": "…"} or {"resources": {"role": "…",
// …}}, each key once, valid UTF-8, nothing after it. Roles come sorted.
func decodeCheckRequest(body []byte) ([]checkRole, error) {
	bad := func(format string, args ...any) ([]checkRole, error) {
		return nil, badRequest("check: "+format, args...)
	}
	const want = `want {"resource": "…"} or {"resources": {"role": "…", …}}`
	if !utf8.Valid(body) {
		return bad("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return bad("%s", want)
	}
	var out []checkRole
	key, err := dec.Token()
	if err != nil {
		return bad("malformed JSON: %v", err)
	}
	switch key {
	case "resource":
		r, err := text(dec, "resource")
		if err != nil {
			return nil, err
		}
		out = append(out, checkRole{resource: r})
	case "resources":
		if out, err = decodeCheckRoles(dec); err != nil {
			return nil, err
		}
	default:
		return bad("%s", want)
	}
	if dec.More() {
		return bad("one of resource or resources, once: %s", want)
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return bad("malformed JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad("unexpected data after the JSON object")
	}
	for _, cr := range out {
		if err := tokens.CheckResource(cr.resource); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeCheckRoles reads the object of role names to resources.
func decodeCheckRoles(dec *json.Decoder) ([]checkRole, error) {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, badRequest(`check: resources: want an object of roles, e.g. {"from": "account/acct-1", "to": "account/acct-2"}`)
	}
	var out []checkRole
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, badRequest("check: malformed JSON: %v", err)
		}
		role, _ := t.(string)
		switch {
		case !validRole(role):
			return nil, badRequest("check: role %q: want lower-case letters, digits and '_', starting with a letter", clip.String(role, 64))
		case slices.ContainsFunc(out, func(c checkRole) bool { return c.role == role }):
			return nil, badRequest("check: role %q given more than once", role)
		case len(out) == maxCheckRoles:
			return nil, badRequest("check: more than %d resources", maxCheckRoles)
		}
		r, err := text(dec, "resources."+role)
		if err != nil {
			return nil, err
		}
		out = append(out, checkRole{role: role, resource: r})
	}
	if _, err := dec.Token(); err != nil {
		return nil, badRequest("check: malformed JSON: %v", err)
	}
	if len(out) == 0 {
		return nil, badRequest("check: resources names none")
	}
	slices.SortFunc(out, func(a, b checkRole) int { return strings.Compare(a.role, b.role) })
	return out, nil
}

// text reads a JSON string value for key.
func text(dec *json.Decoder, key string) (string, error) {
	t, err := dec.Token()
	s, ok := t.(string)
	if err != nil || !ok || strings.ContainsRune(s, utf8.RuneError) {
		return "", badRequest("check: %s: want text (valid UTF-8, no lone surrogates)", key)
	}
	return s, nil
}

// validRole reports whether s may name a role, as in a policy.
func validRole(s string) bool {
	if s == "" || len(s) > 63 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}
