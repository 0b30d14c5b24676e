package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/policy"
)

// loadOpenAPI loads and validates the document of policyYAML with
// kin-openapi.
func loadOpenAPI(t *testing.T, policyYAML string) (*openapi3.T, []byte) {
	t.Helper()
	pol, err := policy.Parse("p.yaml", []byte(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	b, err := gateway.OpenAPI(pol, "test")
	if err != nil {
		t.Fatal(err)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(b)
	if err != nil {
		t.Fatalf("kin-openapi cannot load the document: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI: %v", err)
	}
	return doc, b
}

// TestOpenAPIDocument: the document of a policy is valid OpenAPI 3.1, lists
// every operation with its arguments' types and bounds, and every problem
// type; the gateway serves the same document.
func TestOpenAPIDocument(t *testing.T) {
	yaml := reservePolicy(t)
	doc, b := loadOpenAPI(t, yaml)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "/" {
		t.Errorf("servers %+v, want the gateway serving the document", doc.Servers)
	}
	debit := doc.Paths.Find("/v1/ops/debit")
	if debit == nil || debit.Post == nil {
		t.Fatal("no POST /v1/ops/debit")
	}
	body := debit.Post.RequestBody.Value.Content.Get("application/json").Schema.Value
	amount := body.Properties["amount_cents"].Value
	if !amount.Type.Is("integer") || amount.Min == nil || *amount.Min != 1 || len(body.Required) != 2 {
		t.Errorf("debit's body schema: %+v; amount_cents %+v", body, amount)
	}
	for _, kind := range []string{"stale-token", "token-required", "authority-halted", "over-reserved", "application"} {
		if !strings.Contains(string(b), "urn:fencegw:problem:"+kind) {
			t.Errorf("the document does not list the problem type %s", kind)
		}
	}
	for _, p := range []string{"/v1/batch", "/v1/leases", "/v1/leases/{id}/keepalive", "/v1/leases/{id}", "/readyz"} {
		if doc.Paths.Find(p) == nil {
			t.Errorf("no path %s", p)
		}
	}

	h := newHarness(t, yaml)
	r := h.do(http.MethodGet, "/v1/openapi.json", nil, "")
	if r.Status != http.StatusOK || !bytes.Equal(withoutInfo(t, r.Body), withoutInfo(t, b)) {
		t.Errorf("GET /v1/openapi.json: %d, %d bytes; want the document (%d bytes)", r.Status, len(r.Body), len(b))
	}
}

// TestOpenAPIRequestsAreAccepted: a request built from the document (its
// path, its headers, a body its schema accepts) is accepted by the
// gateway, and its answer matches the document; a body the document
// refuses, the gateway refuses too; a stale write's problem matches the
// document's Problem.
func TestOpenAPIRequestsAreAccepted(t *testing.T) {
	yaml := demoPolicy(t, "monotonic")
	router := openAPIRouter(t, yaml)
	h := newHarness(t, yaml)
	old, l := h.succession("account/acct-30", 30)

	send := func(token, body string, wantDocOK bool) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, h.base+"/v1/ops/debit", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(gateway.TokenHeader, token)
		req.Header.Set(gateway.IdempotencyHeader, `"k-`+token[len(token)-6:]+`-`+body[len(body)-4:len(body)-1]+`"`)
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatalf("the document has no route for the request: %v", err)
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if err := openapi3filter.ValidateRequest(context.Background(), in); (err == nil) != wantDocOK {
			t.Fatalf("the document says %v for %s", err, body)
		}
		req.Body = io.NopCloser(strings.NewReader(body)) // the validator read it
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
			t.Errorf("the answer %d %s does not match the document: %v", resp.StatusCode, got, err)
		}
		return resp.StatusCode, got
	}
	if status, got := send(l.Token, `{"account": "acct-30", "amount_cents": 25}`, true); status != http.StatusOK {
		t.Fatalf("a request built from the document: %d %s", status, got)
	}
	before := h.state()
	if status, got := send(l.Token, `{"account": "acct-30", "amount_cents": 0}`, false); status != http.StatusBadRequest {
		t.Fatalf("a body the document refuses: %d %s, want 400", status, got)
	}
	if status, got := send(old.Token, `{"account": "acct-30", "amount_cents": 26}`, true); status != http.StatusConflict {
		t.Fatalf("a stale write: %d %s, want 409", status, got)
	}
	if after := h.state(); after != before {
		t.Errorf("refused requests changed the database: %s -> %s", before, after)
	}
}

// withoutInfo is a document without its info (the policy file's name and
// the build differ between the test and the harness).
func withoutInfo(t *testing.T, b []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "info")
	out, _ := json.Marshal(m)
	return out
}

// TestOpenAPISecuritySchemes: the document declares the ways the
// policy's clients prove who they are, and every /v1 call accepts any of
// them; a policy without clients declares none.
func TestOpenAPISecuritySchemes(t *testing.T) {
	doc, _ := loadOpenAPI(t, certificatePolicy(t))
	schemes := doc.Components.SecuritySchemes
	if len(schemes) != 2 || schemes["bearer"] == nil || schemes["mutualTLS"] == nil || schemes["mutualTLS"].Value.Type != "mutualTLS" {
		t.Fatalf("security schemes %v, want bearer and mutualTLS", schemes)
	}
	for _, p := range []string{"/v1/ops/debit", "/v1/leases", "/v1/status"} {
		item := doc.Paths.Find(p)
		op := item.Post
		if op == nil {
			op = item.Get
		}
		if op.Security == nil || len(*op.Security) != 2 {
			t.Errorf("%s: security %v, want either scheme", p, op.Security)
		}
	}
	doc, _ = loadOpenAPI(t, demoPolicy(t, "monotonic")+"\nclients:\n  pod: {jwt: {subject: s}, operations: [debit]}\n")
	if jwt := doc.Components.SecuritySchemes["jwt"]; len(doc.Components.SecuritySchemes) != 1 || jwt == nil || jwt.Value.BearerFormat != "JWT" {
		t.Errorf("a policy of JWT clients: security schemes %v, want jwt alone, bearerFormat JWT", doc.Components.SecuritySchemes)
	}
	if doc, _ := loadOpenAPI(t, demoPolicy(t, "monotonic")); len(doc.Components.SecuritySchemes) != 0 {
		t.Errorf("a policy without clients declares %v", doc.Components.SecuritySchemes)
	}
}
