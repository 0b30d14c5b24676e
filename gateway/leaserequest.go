package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/outcome"
	"github.com/fencegw/fencegw/tokens"
)

// ErrMediaType refuses a body that does not say it is JSON: a web page
// can make a browser send text/plain or a form anywhere without asking,
// never application/json.
var ErrMediaType = outcome.New("gateway: unsupported media type", outcome.Refused)

// requireJSON refuses a request whose body is not declared JSON, in one
// Content-Type (of two, which would a proxy believe?), and UTF-8 if it
// names a charset: the body is read as UTF-8 whatever it says.
func requireJSON(r *http.Request) error {
	declared := r.Header.Values("Content-Type")
	if len(declared) > 1 {
		return fmt.Errorf("%w: %d Content-Type headers; send one: application/json", ErrMediaType, len(declared))
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return fmt.Errorf("%w: send Content-Type: application/json", ErrMediaType)
	}
	if cs, named := params["charset"]; named && !strings.EqualFold(cs, "utf-8") {
		return fmt.Errorf("%w: charset %q: the body is read as UTF-8; send charset=utf-8 or none", ErrMediaType, clip.String(cs, 32))
	}
	return nil
}

// decodeLeaseRequest reads a lease request as strictly as write arguments:
// a JSON object with at most the keys resource, ttl, wait, value and
// permits, each
// once and spelled exactly so; valid UTF-8 without lone surrogates (which
// would decode to U+FFFD and make two byte strings one lock); nothing
// after it.
func decodeLeaseRequest(body []byte) (acquireRequest, error) {
	var req acquireRequest
	bad := func(format string, args ...any) (acquireRequest, error) {
		return acquireRequest{}, badRequest("lease request: "+format, args...)
	}
	if !utf8.Valid(body) {
		return bad("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return bad(`want a JSON object: {"resource": "…", "ttl": seconds, "wait": seconds, "value": "…"}`)
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return bad("malformed JSON: %v", err)
		}
		key, _ := t.(string)
		if seen[key] {
			return bad("%q given more than once", clip.String(key, 32))
		}
		seen[key] = true
		if t, err = dec.Token(); err != nil {
			return bad("malformed JSON: %v", err)
		}
		switch key {
		case "resource", "value":
			s, ok := t.(string)
			if !ok || strings.ContainsRune(s, utf8.RuneError) {
				return bad("%s: want text (valid UTF-8, no lone surrogates)", key)
			}
			if key == "resource" {
				req.Resource = s
			} else {
				req.Value = s
			}
		case "ttl":
			n, ok := t.(json.Number)
			v, err := strconv.ParseInt(string(n), 10, 64)
			if ok && errors.Is(err, strconv.ErrRange) {
				return bad("ttl %s s is out of range [%d, %d]", clip.String(string(n), 32), authority.MinTTL/time.Second, authority.MaxTTL/time.Second)
			}
			if !ok || err != nil {
				return bad("ttl: want whole seconds")
			}
			req.TTL = &v
		case "wait":
			n, ok := t.(json.Number)
			v, err := strconv.ParseFloat(string(n), 64)
			if !ok || err != nil {
				return bad("wait: want seconds")
			}
			req.Wait = &v
		case "permits":
			n, ok := t.(json.Number)
			v, err := strconv.ParseInt(string(n), 10, 64)
			if !ok || (err != nil && !errors.Is(err, strconv.ErrRange)) {
				return bad("permits: want a whole number, 1 to %d", tokens.MaxPermits)
			}
			if err != nil || v < 1 || v > tokens.MaxPermits {
				return bad("permits %s is out of range [1, %d]", clip.String(string(n), 32), tokens.MaxPermits)
			}
			req.Permits = &v
		default:
			return bad("unknown key %q: a lease request has resource, ttl, wait, value and permits", clip.String(key, 32))
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return bad("malformed JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad("unexpected data after the JSON object")
	}
	switch {
	case req.TTL != nil && (*req.TTL < int64(authority.MinTTL/time.Second) || *req.TTL > int64(authority.MaxTTL/time.Second)):
		return bad("ttl %d s is out of range [%d, %d]", *req.TTL, authority.MinTTL/time.Second, authority.MaxTTL/time.Second)
	case req.Wait != nil && (math.IsNaN(*req.Wait) || *req.Wait < 0 || *req.Wait > authority.MaxWait.Seconds()):
		return bad("wait %g s is out of range [0, %g]", *req.Wait, authority.MaxWait.Seconds())
	}
	return req, tokens.CheckResource(req.Resource)
}
