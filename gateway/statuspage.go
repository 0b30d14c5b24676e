package gateway

import (
	"bytes"
	"embed"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
)

// statusFiles are the status page: HTML, CSS and JS served as they are,
// with no build step and nothing fetched from elsewhere.
//
//go:embed status
var statusFiles embed.FS

// statusPageCSP lets the page run only its own script and style and talk
// only to this gateway: even a resource name that slipped into the page as
// markup could not run a script.
const statusPageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// handleStatusPage serves GET /status. The page itself holds no data and
// needs no token: it asks for one when GET /v1/status answers 401.
func (g *Gateway) handleStatusPage(w http.ResponseWriter, r *http.Request) {
	g.serveStatusFile(w, r, "status/index.html")
}

// handleStatusFile serves the page's script and style sheet, which are
// all /status/{file} can name: the page's relative links resolve from
// /status only, so the page is not among them.
func (g *Gateway) handleStatusFile(w http.ResponseWriter, r *http.Request) {
	g.serveStatusFile(w, r, "status/assets/"+chi.URLParam(r, "file"))
}

func (g *Gateway) serveStatusFile(w http.ResponseWriter, r *http.Request, path string) {
	// embed.FS refuses names with "..", and a chi parameter holds no "/".
	body, err := statusFiles.ReadFile(path)
	if err != nil {
		g.writeProblem(w, r, fmt.Errorf("%w: %s %s", ErrNoRoute, r.Method, r.URL.Path), problemScope{})
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", statusPageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache") // a new build's page, not a stale one
	http.ServeContent(w, r, path, time.Time{}, bytes.NewReader(body))
}
