package gateway

import (
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// OpsHandler serves /livez, /readyz and /metrics and nothing else, for a
// listener of their own (serve's --ops-listen): plain HTTP for the probes
// and scrapers beside the process, while the API asks for TLS and client
// certificates. The API's Handler serves /livez and /readyz too, and
// /metrics unless Config.OpsListener says this listener exists.
func (g *Gateway) OpsHandler() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	r.Use(middleware.GetHead)
	get := func(pattern string, h http.Handler) {
		r.Method(http.MethodGet, pattern, routeNamed(pattern, h))
	}
	get("/livez", http.HandlerFunc(g.handleLive))
	get("/readyz", http.HandlerFunc(g.handleReady))
	get("/metrics", promhttp.HandlerFor(g.metrics.registry, promhttp.HandlerOpts{}))
	notFound := func(w http.ResponseWriter, req *http.Request) {
		g.writeProblem(w, req, fmt.Errorf("%w: %s %s: this listener serves /livez, /readyz and /metrics only", ErrNoRoute, req.Method, req.URL.Path), problemScope{})
	}
	r.NotFound(notFound)
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		g.writeProblem(w, req, fmt.Errorf("%w: %s on %s", ErrMethod, req.Method, req.URL.Path), problemScope{})
	})
	return g.logAccess(r, r)
}
