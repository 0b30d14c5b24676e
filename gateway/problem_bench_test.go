package gateway

import (
	"github.com/fencegw/fencegw/fence"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fencegw/fencegw/tokens"
)

// BenchmarkWriteProblem measures the refusal path's own cost: mapping the
// error, counting it, logging it and encoding the document.
func BenchmarkWriteProblem(b *testing.B) {
	g := &Gateway{log: slog.New(slog.NewJSONHandler(io.Discard, nil)), metrics: newMetrics(func() float64 { return 0 }, func() float64 { return 1 }, func() float64 { return 0 })}
	err := &fence.StaleTokenError{Resource: "account/acct-1", Presented: tokens.Token{Epoch: 1, Revision: 41}, Current: tokens.Token{Epoch: 1, Revision: 42}}
	r := httptest.NewRequest(http.MethodPost, "/v1/ops/debit", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		g.writeProblem(w, r, err, problemScope{Operation: "debit"})
	}
}
