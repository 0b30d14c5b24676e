package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/buildinfo"
	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/node"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// Bounds of GET /v1/status, whoever and however many ask.
const (
	statusRows    = 20              // rows per list
	statusTimeout = 2 * time.Second // for each of PostgreSQL and etcd
	// statusFor is how long a gathered status is shared: every open page
	// polls, and each gathering costs four queries, a page of etcd lock
	// keys and three etcd reads per lock shown.
	statusFor        = time.Second
	statusValueBytes = 200 // bytes of a lock's value shown
	// statusRefusalsScanned bounds the refusals grouped by resource and
	// reason for the page's list.
	statusRefusalsScanned = 1000
)

// sourceOK is a source's state when it answered.
const sourceOK = "ok"

// statusView is GET /v1/status: what the status page shows.
type statusView struct {
	// Version is the gateway's (VERSION, as `fencegw version` prints it).
	Version string    `json:"version"`
	At      time.Time `json:"at"`
	// Age is how old the view was when sent (it is shared for statusFor),
	// so the page counts TTLs down from when etcd reported them.
	Age       float64         `json:"age_seconds"`
	Authority authorityStatus `json:"authority"`
	// Sources says, for PostgreSQL and etcd, "ok" or why the lists read
	// from it are missing (null): one being down leaves the rest shown.
	Sources        statusSources          `json:"sources"`
	Fences         []fence.FenceRow       `json:"fences"`
	Locks          []lockStatus           `json:"locks"`
	LocksTruncated bool                   `json:"locks_truncated"`
	Rejections     []fence.RejectionGroup `json:"rejections"` // grouped by resource and reason
	Bypasses       []fence.BypassRow      `json:"bypasses"`
	// History is the lock history's newest events, every resource's: who
	// held what lately, and how each lease ended.
	History []fence.HistoryEvent `json:"history"`
	Rates   rateView             `json:"rates"`
}

type authorityStatus struct {
	Epoch    int64  `json:"epoch"`
	Revision int64  `json:"etcd_revision"` // the newest this gateway has seen
	Halted   bool   `json:"halted"`
	Reason   string `json:"reason,omitempty"`
}

type statusSources struct {
	Postgres string `json:"postgres"`
	Etcd     string `json:"etcd"`
}

// lockStatus is one held lock. The holder's token is unsigned: a place in
// the order, not the capability its holder writes with.
type lockStatus struct {
	Resource string       `json:"resource"`
	Holder   tokens.Token `json:"holder_token"`
	// HolderClient is the client holding it, or anonymous.
	HolderClient string `json:"holder_client"`
	TTL          int64  `json:"ttl"` // seconds left when etcd was read
	Waiters      int64  `json:"waiters"`
	Transitions  int64  `json:"transitions"`     // the lock's grants (authority.LockState)
	Value        string `json:"value,omitempty"` // clipped to statusValueBytes bytes
}

type rateView struct {
	IntervalSeconds float64           `json:"interval_seconds"`
	Samples         []node.RateSample `json:"samples"` // oldest first
}

// statusBoard is what the status page keeps between requests: the newest
// gathered status, shared by every caller within statusFor of it. The
// chart's history is the node's (Node.Rates).
type statusBoard struct {
	mu   sync.Mutex // one gathering at a time; the others wait for its answer
	at   time.Time
	view statusView
}

// handleStatus serves GET /v1/status.
func (g *Gateway) handleStatus(w http.ResponseWriter, r *http.Request) {
	// It names every resource locked or refused, and every lease's value:
	// with clients declared, only one allowed every operation sees it.
	if c, _ := r.Context().Value(clientKey{}).(*policy.Client); c != nil && !c.MayCallEvery() {
		g.writeProblem(w, r, fmt.Errorf("%w: client %s may not read the status: it needs operations [\"*\"]", ErrForbidden, c.Name), problemScope{})
		return
	}
	v := g.status.get(r.Context(), g)
	v.Age = time.Since(v.At).Seconds()
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, v)
}

func (b *statusBoard) get(ctx context.Context, g *Gateway) statusView {
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.at) < statusFor {
		return b.view
	}
	// Detached from the caller: its answer serves the others too.
	b.view, b.at = g.gatherStatus(context.WithoutCancel(ctx)), time.Now()
	return b.view
}

// gatherStatus reads PostgreSQL and etcd side by side, each within
// statusTimeout.
func (g *Gateway) gatherStatus(ctx context.Context) statusView {
	v := statusView{
		Version:   buildinfo.Read().Version,
		At:        time.Now(),
		Authority: g.authorityStatus(),
		Rates:     rateView{IntervalSeconds: node.RateEvery.Seconds(), Samples: g.cfg.Node.Rates()},
	}
	var wg sync.WaitGroup
	wg.Go(func() { g.statusFromPostgres(ctx, &v) })
	wg.Go(func() { g.statusFromEtcd(ctx, &v) })
	wg.Wait()
	return v
}

// authorityStatus is what this replica's authority holds in memory, as
// /readyz reports it.
func (g *Gateway) authorityStatus() authorityStatus {
	a := g.cfg.Authority
	st := authorityStatus{Epoch: a.Epoch(), Revision: a.NewestRevision()}
	if err := a.Halted(); err != nil {
		st.Halted, st.Reason = true, publicDetail(err.Error())
	}
	return st
}

// statusFromPostgres fills the lists PostgreSQL keeps, or none of them.
func (g *Gateway) statusFromPostgres(ctx context.Context, v *statusView) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	fences, err := fence.Fences(ctx, g.cfg.Pool, "", statusRows)
	var rejections []fence.RejectionGroup
	var bypasses []fence.BypassRow
	var history []fence.HistoryEvent
	if err == nil {
		rejections, err = fence.RejectionGroups(ctx, g.cfg.Pool, "", statusRows, statusRefusalsScanned)
	}
	if err == nil {
		bypasses, err = fence.Bypasses(ctx, g.cfg.Pool, statusRows)
	}
	if err == nil {
		history, err = fence.RecentHistory(ctx, g.cfg.Pool, statusRows)
	}
	if err != nil {
		// Connection strings and server messages stay in the log.
		g.log.Warn("status page: reading PostgreSQL failed", "error", err)
		v.Sources.Postgres = "unavailable: unreachable or refusing queries (see the gateway's log)"
		return
	}
	for i := range fences {
		fences[i].Token = g.cfg.Policy.ShownToken(fences[i].Resource, fences[i].Token)
	}
	v.Fences, v.Rejections, v.Bypasses, v.History = fences, rejections, bypasses, history
	v.Sources.Postgres = sourceOK
}

// statusFromEtcd fills the locks held, or says why not.
func (g *Gateway) statusFromEtcd(ctx context.Context, v *statusView) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	locks, truncated, err := g.cfg.Authority.ObserveAll(ctx, "", statusRows)
	if err != nil {
		g.log.Warn("status page: reading etcd failed", "error", err)
		v.Sources.Etcd = "unavailable: unreachable (see the gateway's log)"
		if errors.Is(err, context.DeadlineExceeded) {
			v.Sources.Etcd = "unavailable: no answer within " + statusTimeout.String()
		}
		return
	}
	v.Locks = make([]lockStatus, 0, len(locks))
	for _, st := range locks {
		h := st.Holder
		v.Locks = append(v.Locks, lockStatus{
			Resource: st.Resource, Holder: g.cfg.Policy.ShownToken(st.Resource, h.Token), HolderClient: cmp.Or(h.Owner, anonymous), TTL: int64(h.TTL / time.Second),
			Waiters: st.Waiting, Transitions: st.Transitions, Value: clip.String(h.Value, statusValueBytes),
		})
	}
	v.LocksTruncated = truncated
	v.Sources.Etcd = sourceOK
}
