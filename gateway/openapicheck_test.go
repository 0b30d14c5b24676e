package gateway_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// openAPIRouter routes requests by the OpenAPI document the gateway
// serves for the policy yaml, for checkAnswer.
func openAPIRouter(t *testing.T, yaml string) routers.Router {
	t.Helper()
	doc, _ := loadOpenAPI(t, yaml)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return router
}

// checkAnswer fails t unless r, the gateway's answer to req, is one the
// OpenAPI document that router was made from describes.
func checkAnswer(t *testing.T, router routers.Router, req *http.Request, r response) {
	t.Helper()
	route, params, err := router.FindRoute(req)
	if err != nil {
		t.Fatalf("the document has no route for %s %s: %v", req.Method, req.URL.Path, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: r.Status, Header: r.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	out.SetBodyBytes(r.Body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("the answer %d %s does not match the document: %v", r.Status, r.Body, err)
	}
}
