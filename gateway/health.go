package gateway

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/fencegw/fencegw/schema"
)

const readyTimeout = 2 * time.Second

// handleLive serves /livez: the process is up and serving HTTP.
func (g *Gateway) handleLive(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReady serves /readyz: 200 only if this replica can take writes now.
func (g *Gateway) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	checks := map[string]string{}
	ok := true
	fail := func(name string, err error) {
		checks[name] = err.Error()
		ok = false
	}
	if !g.ready.Load() {
		fail("gateway", ErrNotReady)
	}
	if v, dirty, err := schema.Applied(ctx, g.cfg.Pool, schema.GatewayTable); err != nil {
		fail("postgres", err)
	} else if dirty || v != g.cfg.SchemaVersion {
		fail("schema", fmt.Errorf("schema version %d (dirty %t), this gateway needs %d: run `fencegw migrate up`", v, dirty, g.cfg.SchemaVersion))
	} else {
		checks["postgres"] = "ok"
	}
	if _, err := g.cfg.Authority.Revision(ctx); err != nil {
		fail("etcd", err)
	} else {
		checks["etcd"] = "ok"
	}
	if err := g.cfg.Authority.Halted(); err != nil {
		fail("authority", err)
	} else {
		checks["authority"] = "ok"
	}
	status := http.StatusOK
	if !ok {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, map[string]any{"ready": ok, "checks": checks})
}
