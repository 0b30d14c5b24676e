package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/fencegw/fencegw/gateway"
)

// TestOpenAPIReadsAndCheck: a read and a check built from the document are
// accepted, their answers (200, and 409 once stale) match it, and the
// write path of a read operation is not in it.
func TestOpenAPIReadsAndCheck(t *testing.T) {
	yaml := readPolicy(t)
	doc, _ := loadOpenAPI(t, yaml)
	if doc.Paths.Find("/v1/ops/balance") != nil || doc.Paths.Find("/v1/reads/balance") == nil || doc.Paths.Find("/v1/fences/check") == nil {
		t.Fatal("the document should have /v1/reads/balance and /v1/fences/check, and no /v1/ops/balance")
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, yaml)
	old, l := h.succession("account/acct-56", 30)
	defer h.release(l)
	send := func(path, token, body string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, h.base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(gateway.TokenHeader, token)
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatalf("the document has no route for %s: %v", path, err)
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Fatalf("the document refuses %s %s: %v", path, body, err)
		}
		req.Body = io.NopCloser(strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
			Options: &openapi3filter.Options{IncludeResponseStatus: true}}
		out.SetBodyBytes(got)
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("%s: the answer %d %s does not match the document: %v", path, resp.StatusCode, got, err)
		}
		return resp.StatusCode
	}
	if w := h.write("credit", l.Token, debit("acct-56", 1)); w.Status != http.StatusOK {
		t.Fatalf("credit: %d %s", w.Status, w.Body)
	}
	for _, tc := range []struct {
		path, token, body string
		want              int
	}{
		{"/v1/reads/balance", l.Token, `{"account": "acct-56"}`, http.StatusOK},
		{"/v1/reads/balance", old.Token, `{"account": "acct-56"}`, http.StatusConflict},
		{"/v1/fences/check", l.Token, `{"resource": "account/acct-56"}`, http.StatusOK},
		{"/v1/fences/check", old.Token, `{"resource": "account/acct-56"}`, http.StatusConflict},
	} {
		if got := send(tc.path, tc.token, tc.body); got != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.path, tc.body, got, tc.want)
		}
	}
}
