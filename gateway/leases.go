package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/clip"
)

// Lease request defaults.
const defaultLeaseTTL = 10 // seconds

type acquireRequest struct {
	Resource string   `json:"resource"`
	TTL      *int64   `json:"ttl"`  // seconds
	Wait     *float64 `json:"wait"` // seconds
	Value    string   `json:"value"`
	// Permits, if sent, is what the client takes the resource to be: a
	// semaphore of that many permits. The policy decides; a request that
	// believes otherwise is refused rather than granted something else.
	Permits *int64 `json:"permits"`
}

type leaseResponse struct {
	LeaseID  string `json:"lease_id"`
	Resource string `json:"resource,omitempty"`
	Token    string `json:"token,omitempty"`
	TTL      int64  `json:"ttl"`
	// A semaphore's permit: its slot (Resource is the slot's) and how
	// many the semaphore has.
	Permit  int `json:"permit,omitempty"`
	Permits int `json:"permits,omitempty"`
}

// handleAcquire serves POST /v1/leases {resource, ttl, wait}: the lock on
// resource under a new etcd lease, and its fencing token; for a semaphore
// (the policy's permits), a free permit slot and the slot's token.
func (g *Gateway) handleAcquire(w http.ResponseWriter, r *http.Request) {
	scope := problemScope{}
	req, err := g.decodeAcquire(w, r)
	if err != nil {
		g.writeProblem(w, r, err, scope)
		return
	}
	scope.Resource = req.Resource
	// Only names the policy knows, and only the caller's: each lease is
	// lock keys and a queue in etcd.
	kind, err := g.cfg.Policy.Lease(clientOf(r.Context()), req.Resource)
	if err == nil {
		err = kind.SlotError(req.Resource)
	}
	if err != nil {
		g.writeProblem(w, r, err, scope)
		return
	}
	if err := checkPermits(req, kind.Permits()); err != nil {
		g.writeProblem(w, r, err, scope)
		return
	}
	ttl := time.Duration(defaultLeaseTTL) * time.Second
	if req.TTL != nil {
		ttl = time.Duration(*req.TTL) * time.Second
	}
	var wait time.Duration
	if req.Wait != nil {
		wait = time.Duration(*req.Wait * float64(time.Second))
	}
	key, _, err := idempotencyKey(r)
	if err != nil {
		g.writeProblem(w, r, err, scope)
		return
	}
	opts := authority.AcquireOptions{
		TTL: ttl, Wait: wait, Value: req.Value, Owner: clientName(r.Context()), Key: key,
		MaxHeld:  cmp.Or(g.cfg.MaxLeasesPerClient, DefaultMaxLeasesPerClient),
		Observer: g.cfg.Node.Name(), LockDelay: kind.LockDelay(), MaxHold: kind.MaxHold(),
		Permits: kind.Permits(),
	}
	if wait > 0 && g.stopWaits.Err() != nil {
		g.writeProblem(w, r, ErrShuttingDown, scope)
		return
	}
	// A wait ends when the gateway stops waits to shut down, too: the
	// acquisition then revokes its lease, instead of leaving a waiter in
	// etcd that no client knows of and that would take the lock when its
	// turn comes, and hold it for its TTL.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if wait > 0 {
		defer context.AfterFunc(g.stopWaits, cancel)()
	}
	start := time.Now()
	lease, err := g.cfg.Authority.Acquire(ctx, req.Resource, opts)
	if err != nil && wait > 0 && g.stopWaits.Err() != nil && r.Context().Err() == nil {
		err = fmt.Errorf("%w: %w", ErrShuttingDown, err)
	}
	if err != nil {
		if errors.Is(err, authority.ErrLocked) {
			g.metrics.leases.WithLabelValues("locked").Inc()
		}
		g.writeProblem(w, r, err, scope)
		return
	}
	g.cfg.Node.AddHistory(fence.HistoryEvent{At: time.Now(), Resource: lease.Resource, Event: fence.Granted, LeaseID: lease.ID.String(),
		Client: opts.Owner, Token: lease.Token.Unsigned().String()})
	if r.Context().Err() != nil {
		// The client left while waiting: without a key nobody will ever
		// learn this lease ID, so hand the lock on now instead of at the
		// TTL. With one, its retry is what the lease waits for.
		g.metrics.clientGone.Inc()
		if key == "" {
			g.cfg.Authority.Abandon(context.WithoutCancel(r.Context()), lease.ID, opts.Owner)
		}
		return
	}
	g.metrics.leases.WithLabelValues("granted").Inc()
	g.metrics.leaseWait.Observe(time.Since(start).Seconds())
	writeJSON(w, http.StatusCreated, leaseResponse{
		LeaseID: lease.ID.String(), Resource: lease.Resource, Token: lease.Token.String(), TTL: int64(lease.TTL / time.Second),
		Permit: lease.Token.Permit, Permits: opts.Permits,
	})
}

func (g *Gateway) decodeAcquire(w http.ResponseWriter, r *http.Request) (acquireRequest, error) {
	if err := requireJSON(r); err != nil {
		return acquireRequest{}, err
	}
	body, err := g.readBodyWithin(w, r)
	if err != nil {
		return acquireRequest{}, err
	}
	return decodeLeaseRequest(body)
}

// handleKeepAlive serves POST /v1/leases/{id}/keepalive. 404 means the
// lease is gone: the holder has lost the lock and must stop writing. The
// answer carries the lease's token signed by the newest key, so a holder
// that keeps its lease across a key rotation writes with a token no
// retirement of the older keys will refuse; absent when the token cannot
// be signed again (authority.Renewal), the holder keeps the one it has.
func (g *Gateway) handleKeepAlive(w http.ResponseWriter, r *http.Request) {
	id, err := authority.ParseLeaseID(chi.URLParam(r, "id"))
	if err == nil {
		var renewal authority.Renewal
		if renewal, err = g.cfg.Authority.KeepAlive(r.Context(), id, clientName(r.Context())); err == nil {
			g.metrics.leases.WithLabelValues("renewed").Inc()
			resp := leaseResponse{LeaseID: id.String(), TTL: int64(renewal.TTL / time.Second)}
			if !renewal.Token.IsZero() {
				resp.Token = renewal.Token.String()
			}
			writeJSON(w, http.StatusOK, resp)
			return
		}
	}
	g.metrics.leases.WithLabelValues("renew_failed").Inc()
	g.writeProblem(w, r, err, problemScope{})
}

// ReleasedHeader says, on a release's answer, what the released token can
// still do: ReleasedTokenWrites, it writes until a successor writes (under
// validation fence; holder validation refuses it at once). A release does
// not move the fence: that would cost every release a PostgreSQL write,
// make a lock-only user's release wait on PostgreSQL, and leave a fence
// row for every lock ever released (docs/concepts.md, "Leases").
const (
	ReleasedHeader      = "Fencing-Released-Token"
	ReleasedTokenWrites = "writes-until-a-successor-writes"
)

// handleRelease serves DELETE /v1/leases/{id}: the lock passes to the next
// waiter at once instead of at expiry.
func (g *Gateway) handleRelease(w http.ResponseWriter, r *http.Request) {
	id, err := authority.ParseLeaseID(chi.URLParam(r, "id"))
	if err == nil {
		if err = g.cfg.Authority.Release(r.Context(), id, clientName(r.Context())); err == nil {
			g.metrics.leases.WithLabelValues("released").Inc()
			w.Header().Set(ReleasedHeader, ReleasedTokenWrites)
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	g.writeProblem(w, r, err, problemScope{})
}

// contenderJSON is a holder or waiter as any client may see it: its place
// in the order (the token without its signature: no capability), its TTL
// and value. Its lease ID and signed token are its holder's alone.
type contenderJSON struct {
	Token string `json:"token"`
	TTL   int64  `json:"ttl,omitempty"` // the holder's; waiters' are not read
	Value string `json:"value,omitempty"`
}

type lockStateJSON struct {
	Resource string          `json:"resource"`
	Revision int64           `json:"revision"`
	Holder   *contenderJSON  `json:"holder"`
	Waiters  []contenderJSON `json:"waiters"` // the first 99 in line
	Waiting  int64           `json:"waiting"` // all of them
	// Transitions counts the lock's grants, the holder's included.
	Transitions int64 `json:"transitions"`
	// Truncated says there are more waiters than shown.
	Truncated bool `json:"truncated,omitempty"`
}

// contender is c, a holder or waiter of resource, as contenderJSON shows
// it; a permit slot's token reads E:R#k however it was read.
func (g *Gateway) contender(resource string, c authority.Contender) contenderJSON {
	return contenderJSON{Token: g.cfg.Policy.ShownToken(resource, c.Token).String(), TTL: int64(c.TTL / time.Second), Value: c.Value}
}

// handleObserve serves GET /v1/leases?resource=…: the holder, its token,
// remaining TTL and value, and the waiters in grant order; for a
// semaphore, each held slot's and the line (observeSemaphore). The
// resource is the caller's, as for POST /v1/leases and the watch.
func (g *Gateway) handleObserve(w http.ResponseWriter, r *http.Request) {
	resource, err := observedResource(r.URL.RawQuery)
	if err != nil {
		g.writeProblem(w, r, err, problemScope{})
		return
	}
	// Who holds a lock, and with what value, is the business of those who
	// may lease it, as for its watch.
	if err := g.mayWatch(clientOf(r.Context()), authority.WatchOptions{Resource: resource}); err != nil {
		g.writeProblem(w, r, err, problemScope{Resource: resource})
		return
	}
	if permits := g.semaphorePermits(resource); permits > 0 {
		g.observeSemaphore(w, r, resource, permits)
		return
	}
	st, err := g.cfg.Authority.Observe(r.Context(), resource)
	if err != nil {
		g.writeProblem(w, r, err, problemScope{Resource: resource})
		return
	}
	out := lockStateJSON{Resource: st.Resource, Revision: st.Revision, Waiters: []contenderJSON{}, Waiting: st.Waiting,
		Truncated: st.Waiting > int64(len(st.Waiters)), Transitions: st.Transitions}
	if st.Holder != nil {
		h := g.contender(st.Resource, *st.Holder)
		out.Holder = &h
	}
	for _, c := range st.Waiters {
		out.Waiters = append(out.Waiters, g.contender(st.Resource, c))
	}
	writeJSON(w, http.StatusOK, out)
}

// observedResource reads the query of GET /v1/leases as strictly as a
// lease request's body: resource, once, and nothing else.
func observedResource(rawQuery string) (string, error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", badRequest("the query string is not valid: want ?resource=…")
	}
	for k := range q {
		if k != "resource" {
			return "", badRequest("unknown query parameter %q: observation takes resource only", clip.String(k, 32))
		}
	}
	if n := len(q["resource"]); n != 1 {
		return "", badRequest("resource given %d times: want ?resource=… once", n)
	}
	return q["resource"][0], nil
}
