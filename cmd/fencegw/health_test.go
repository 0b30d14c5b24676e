package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHealthCommand: 0 for a 2xx, 1 (saying why) for anything else or no
// answer, a usage error for what is not an HTTP URL.
func TestHealthCommand(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "postgres: unavailable\n")
	}))
	defer srv.Close()
	ctx := context.Background()
	if err := execute(ctx, io.Discard, "health", srv.URL+"/readyz"); err != nil {
		t.Fatalf("a ready gateway: %v", err)
	}
	status = http.StatusServiceUnavailable
	var exit *exitError
	if err := execute(ctx, io.Discard, "health", srv.URL+"/readyz"); !errors.As(err, &exit) || exit.code != 1 {
		t.Fatalf("an unready gateway: %v, want exit 1", err)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	if err := execute(ctx, io.Discard, "health", "--timeout", "2s", closed.URL+"/readyz"); !errors.As(err, &exit) || exit.code != 1 {
		t.Fatalf("no gateway: %v, want exit 1", err)
	}
	for _, bad := range [][]string{{"health", "ftp://x/readyz"}, {"health", "not a url"}, {"health", "--timeout", "0s"}} {
		if err := execute(ctx, io.Discard, bad...); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
}
