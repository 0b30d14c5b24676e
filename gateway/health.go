package gateway

import (
	"context"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/fencegw/fencegw/schema"
)

const (
	readyTimeout = 2 * time.Second
	// readyFor is how long a readiness check's answer is reused: probes
	// come from load balancers, and were they unauthenticated or many, a
	// query and a linearizable etcd read each would slow the writes.
	readyFor = time.Second
)

// readiness is the latest readiness check, shared by every /readyz caller
// within readyFor of it.
type readiness struct {
	mu     sync.Mutex // one check at a time; the others wait for its answer
	at     time.Time
	ok     bool
	checks map[string]string
}

// handleLive serves /livez: the process is up and serving HTTP.
func (g *Gateway) handleLive(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReady serves /readyz: 200 only if this replica can take writes now.
// A failing check says which dependency failed, not how: connection
// strings and server messages stay in the log.
func (g *Gateway) handleReady(w http.ResponseWriter, r *http.Request) {
	ok, cached := g.readiness.check(r.Context(), g)
	checks := maps.Clone(cached)
	// In memory, so never cached: a halt or a resume shows at once.
	if err := g.cfg.Authority.Halted(); err != nil {
		checks["authority"], ok = err.Error(), false
	} else {
		checks["authority"] = "ok"
	}
	// Reported, not counted against readiness: replicas of one fleet run
	// different policies during every rolling policy change.
	checks["policy"] = g.cfg.Node.PolicyCheck()
	status := http.StatusOK
	if !g.ready.Load() {
		ok = false
		checks = map[string]string{"gateway": "not ready: starting or draining"}
	}
	if !ok {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, map[string]any{"ready": ok, "checks": checks})
}

// check returns the newest check's answer, running one if it is older than
// readyFor.
func (rd *readiness) check(ctx context.Context, g *Gateway) (bool, map[string]string) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if time.Since(rd.at) < readyFor {
		return rd.ok, rd.checks
	}
	// Detached from the caller: its answer serves the others too.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readyTimeout)
	defer cancel()
	checks, ok := map[string]string{}, true
	fail := func(name, what string, err error) {
		checks[name], ok = what, false
		g.log.Warn("readiness check failed", "check", name, "error", err)
	}
	if st, err := schema.ReadState(ctx, g.cfg.Pool, schema.Gateway()); err != nil {
		fail("postgres", "unreachable or refusing queries (see the gateway's log)", err)
	} else if st.Dirty || st.Version != g.cfg.SchemaVersion {
		checks["postgres"] = "ok"
		checks["schema"], ok = "not this gateway's version: run `fencegw migrate up`", false
	} else if differ := st.DefinitionsDiffer(); differ != "" {
		// A function replaced or dropped since start-up: the gateway's
		// writes would run someone else's fence, or fail.
		checks["postgres"] = "ok"
		checks["schema"], ok = differ, false
	} else {
		checks["postgres"], checks["schema"] = "ok", "ok"
	}
	if _, err := g.cfg.Authority.Revision(ctx); err != nil {
		fail("etcd", "unreachable (see the gateway's log)", err)
	} else {
		checks["etcd"] = "ok"
	}
	rd.at, rd.ok, rd.checks = time.Now(), ok, checks
	return ok, checks
}
