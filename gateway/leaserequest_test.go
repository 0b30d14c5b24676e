package gateway

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/tokens"
)

// FuzzDecodeLeaseRequest: the lease request parser never panics, refuses
// only with bad requests, and what it accepts is a JSON object that
// encoding/json reads the same, with an acceptable resource name.
func FuzzDecodeLeaseRequest(f *testing.F) {
	for _, s := range []string{
		`{"resource": "account/acct-1", "ttl": 10, "wait": 2.5, "value": "10.0.0.7:80"}`, `{"resource": "r"}`,
		`{"resource": "a", "resource": "b"}`, `{"RESOURCE": "r"}`, "{\"resource\": \"r\xff\"}", `{"resource": "r\ud800"}`,
		`{"resource": "r\u200b"}`, `{"resource": " r"}`, `{"resource": "r"} {}`, `{"resource": "r", "ttl": 1.5}`, `[]`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeLeaseRequest(body)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) && !errors.Is(err, tokens.ErrBadResource) {
				t.Fatalf("decodeLeaseRequest(%q) = %v: not a bad request", body, err)
			}
			return
		}
		if tokens.CheckResource(req.Resource) != nil {
			t.Fatalf("accepted resource %q", req.Resource)
		}
		var theirs struct {
			Resource, Value string
			TTL             *int64
			Wait            *float64
		}
		if err := json.Unmarshal(body, &theirs); err != nil || theirs.Resource != req.Resource || theirs.Value != req.Value ||
			(theirs.TTL == nil) != (req.TTL == nil) || (theirs.Wait == nil) != (req.Wait == nil) {
			t.Fatalf("%q: accepted as %+v, encoding/json reads %+v, %v", body, req, theirs, err)
		}
	})
}

// TestLeaseRequestErrorsSayWhat: each refusal names what is wrong with
// the value sent, not another rule it happens to break too.
func TestLeaseRequestErrorsSayWhat(t *testing.T) {
	for body, want := range map[string]string{
		`{"resource": "r", "ttl": 1.5}`:                   "want whole seconds",
		`{"resource": "r", "ttl": 99999999999999999999}`:  "out of range",
		`{"resource": "r", "ttl": -99999999999999999999}`: "out of range",
		`{"resource": "r", "ttl": 86400}`:                 "out of range",
		`{"resource": "r\u0000"}`:                         "control",
	} {
		if _, err := decodeLeaseRequest([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to say %q", body, err, want)
		}
	}
}
