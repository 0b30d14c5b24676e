package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/clip"
)

// handleSetValue serves PATCH /v1/leases/{id} {"value": "…"}: the holder
// publishes a new value of its lock (its address, its term's metadata)
// without taking the lock again; observers and watchers see it. Only the
// holder: a waiter's lease is answered like an unknown one (404), as is
// another client's.
func (g *Gateway) handleSetValue(w http.ResponseWriter, r *http.Request) {
	id, err := authority.ParseLeaseID(chi.URLParam(r, "id"))
	if err == nil {
		err = requireJSON(r)
	}
	var body []byte
	if err == nil {
		body, err = g.readBodyWithin(w, r)
	}
	var value string
	if err == nil {
		value, err = decodeValueRequest(body)
	}
	if err == nil {
		if err = g.cfg.Authority.SetValue(r.Context(), id, clientName(r.Context()), value); err == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	g.writeProblem(w, r, err, problemScope{})
}

// decodeValueRequest reads a value update as strictly as a lease
// request: a JSON object with the one key value, text, once; nothing
// after it.
func decodeValueRequest(body []byte) (string, error) {
	bad := func(format string, args ...any) (string, error) {
		return "", badRequest("value update: "+format, args...)
	}
	if !utf8.Valid(body) {
		return bad("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return bad(`want a JSON object: {"value": "…"}`)
	}
	var value *string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return bad("malformed JSON: %v", err)
		}
		key, _ := t.(string)
		if key != "value" {
			return bad("unknown key %q: a value update has value only", clip.String(key, 32))
		}
		if value != nil {
			return bad("value given more than once")
		}
		if t, err = dec.Token(); err != nil {
			return bad("malformed JSON: %v", err)
		}
		s, ok := t.(string)
		if !ok || strings.ContainsRune(s, utf8.RuneError) {
			return bad("value: want text (valid UTF-8, no lone surrogates)")
		}
		value = &s
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return bad("malformed JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad("unexpected data after the JSON object")
	}
	if value == nil {
		return bad(`no value: want {"value": "…"} ("" clears it)`)
	}
	return *value, nil
}
