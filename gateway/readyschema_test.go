package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/schema"
)

// TestNotReadyWhileAFunctionDiffers: a gateway function replaced by hand
// while the gateway runs (here, guard_truncate made to let every TRUNCATE
// through) turns /readyz 503, naming the function and the fix; once
// `migrate up` defines it again, the gateway is ready again.
func TestNotReadyWhileAFunctionDiffers(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	if r := h.do(http.MethodGet, "/readyz", nil, ""); r.Status != http.StatusOK {
		t.Fatalf("readyz: %d %s", r.Status, r.Body)
	}
	_, err := h.pool.Exec(context.Background(), `CREATE OR REPLACE FUNCTION fencegw.guard_truncate() RETURNS trigger
		LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$ BEGIN RETURN NULL; END $$`)
	if err != nil {
		t.Fatal(err)
	}
	const want = "fencegw.guard_truncate differs from this binary's: run `fencegw migrate up`"
	var last response
	// The answer is cached for a second: wait for the next check.
	if !testenv.WaitFor(30*time.Second, func() bool {
		last = h.do(http.MethodGet, "/readyz", nil, "")
		return last.Status == http.StatusServiceUnavailable
	}) {
		t.Fatalf("readyz after guard_truncate was replaced: %d %s, want 503", last.Status, last.Body)
	}
	if !strings.Contains(string(last.Body), want) {
		t.Fatalf("readyz: %s, want the schema check to say %q", last.Body, want)
	}
	if err := schema.Up(h.pool.Config().ConnConfig.ConnString(), schema.Gateway()); err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(30*time.Second, func() bool {
		last = h.do(http.MethodGet, "/readyz", nil, "")
		return last.Status == http.StatusOK
	}) {
		t.Fatalf("readyz after migrate up: %d %s, want 200", last.Status, last.Body)
	}
}
