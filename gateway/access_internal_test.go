package gateway

import (
	"context"
	"errors"
	"testing"

	"github.com/go-chi/chi/v5"
)

type otherKey struct{}

// TestAccessContext: a request's context answers its access entry and
// route context itself, every other value from its parent, and is
// cancelled with its parent, as are contexts derived from it.
func TestAccessContext(t *testing.T) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), otherKey{}, "parent's"))
	e, rc := &accessEntry{id: "r-1"}, chi.NewRouteContext()
	ctx := context.Context(&accessContext{Context: parent, entry: e, route: rc})
	if got := accessOf(ctx); got != e {
		t.Errorf("accessOf = %p, want the entry %p", got, e)
	}
	if got := chi.RouteContext(ctx); got != rc {
		t.Errorf("chi.RouteContext = %p, want the route context %p", got, rc)
	}
	if got := ctx.Value(otherKey{}); got != "parent's" {
		t.Errorf("another key's value = %v, want the parent's", got)
	}
	derived, stop := context.WithCancel(ctx)
	defer stop()
	if derived.Err() != nil || ctx.Err() != nil {
		t.Fatal("cancelled before its parent was")
	}
	cancel()
	<-derived.Done()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("Err = %v after the parent's cancel, want context.Canceled", ctx.Err())
	}
}
