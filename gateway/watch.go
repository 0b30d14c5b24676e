package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/clip"
)

// Watch limits' defaults.
const (
	DefaultMaxWatches     = 1024
	DefaultWatchHeartbeat = 15 * time.Second
)

// watchQueue bounds the events of one watch not yet written to its
// client: a client that falls that far behind is cut off, and resumes
// with Last-Event-ID, rather than have the gateway buffer for it.
const watchQueue = 256

// watchWriteTimeout bounds each write of a watch stream: a client that
// takes nothing for this long is cut off even before its queue fills.
const watchWriteTimeout = 10 * time.Second

// watchEventJSON is one event of a watch stream, its SSE data.
type watchEventJSON struct {
	Type     string `json:"type"`
	Resource string `json:"resource,omitempty"`
	Revision int64  `json:"revision"`
	// Holder is the lock's holder (state, granted, value; null in a state
	// when the lock is free) or the lease that ended, as GET /v1/leases
	// shows it: no lease ID, no signature.
	Holder      *contenderJSON `json:"holder"`
	Transitions int64          `json:"transitions"`
	// Permit is the slot, in a semaphore's watch (resource names it).
	Permit int `json:"permit,omitempty"`
}

// handleWatch serves GET /v1/leases/watch?resource=… (or ?prefix=…, or
// ?all=true) as Server-Sent Events: the state of the locks, then every
// change, each with its etcd revision as the event ID, until the client
// leaves, falls behind, or the gateway shuts down; a semaphore's are its
// slots'. A client resuming with Last-Event-ID gets what came after it,
// without the state (authority.Watch).
func (g *Gateway) handleWatch(w http.ResponseWriter, r *http.Request) {
	target, err := watchQuery(r.URL.RawQuery)
	if err != nil {
		g.writeProblem(w, r, err, problemScope{})
		return
	}
	scope := problemScope{Resource: cmp.Or(target.Resource, target.Prefix)}
	if err := g.mayWatch(clientOf(r.Context()), target); err != nil {
		g.writeProblem(w, r, err, scope)
		return
	}
	after, err := lastEventID(r.Header.Values("Last-Event-ID"))
	if err != nil {
		g.writeProblem(w, r, err, scope)
		return
	}
	client := clientName(r.Context())
	if err := g.watchCalls.enter(client); err != nil {
		g.writeProblem(w, r, err, scope)
		return
	}
	defer g.watchCalls.leave(client)
	if g.stopWaits.Err() != nil {
		g.writeProblem(w, r, ErrShuttingDown, scope)
		return
	}
	// The stream ends when the gateway stops waits to shut down: it would
	// outlast any drain. Its client resumes on another replica.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(g.stopWaits, cancel)()
	every := cmp.Or(g.cfg.WatchHeartbeat, DefaultWatchHeartbeat)
	if target.Resource != "" {
		// A semaphore's holders hold its slots: the watch follows them.
		target.Permits = g.semaphorePermits(target.Resource)
	}
	watch, err := g.cfg.Authority.Watch(ctx, authority.WatchOptions{Resource: target.Resource, Prefix: target.Prefix, All: target.All,
		Permits: target.Permits, After: after, Queue: watchQueue, Progress: every})
	if err != nil {
		if errors.Is(err, authority.ErrFutureRevision) {
			err = badRequest("Last-Event-ID %d: %v; resume from an ID this gateway sent, or start again without one", after, err)
		}
		g.writeProblem(w, r, err, scope)
		return
	}
	defer watch.Stop()
	g.metrics.watches.Inc()
	defer g.metrics.watches.Dec()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies that buffer answers: not this one
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(watchWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send([]byte(": watching\n\n")) {
		return
	}
	heartbeat := time.NewTicker(every)
	defer heartbeat.Stop()
	for {
		select {
		case ev, ok := <-watch.Events:
			if !ok {
				if errors.Is(watch.Err(), authority.ErrSlowReader) {
					g.metrics.watchCutOff.Inc()
				}
				return
			}
			if !send(g.sseEvent(ev)) {
				return
			}
		case <-heartbeat.C:
			// A comment: proxies that close idle streams see traffic, and
			// clients see nothing.
			if !send([]byte(": heartbeat\n\n")) {
				return
			}
		}
	}
}

// sseEvent is ev as a Server-Sent Event. Changes, synced and progress
// carry their revision as the event ID, and nothing else does: a client that
// resumes after a state event it has seen half of, or after a relist,
// is sent the state whole again.
func (g *Gateway) sseEvent(ev authority.LockEvent) []byte {
	if ev.Type == authority.EventProgress {
		// An id and no data: clients (EventSource too) take the id as the
		// last one seen and dispatch nothing, so an idle stream resumes
		// from a revision etcd still has.
		return fmt.Appendf(nil, "id: %d\n: progress\n\n", ev.Revision)
	}
	out := watchEventJSON{Type: string(ev.Type), Resource: ev.Resource, Revision: ev.Revision, Transitions: ev.Transitions, Permit: ev.Permit}
	if ev.Holder != nil {
		h := g.contender(ev.Resource, *ev.Holder)
		out.Holder = &h
	}
	data, _ := json.Marshal(out) // strings and numbers: cannot fail
	var b []byte
	if ev.Type != authority.EventState && ev.Type != authority.EventRelist {
		b = fmt.Appendf(b, "id: %d\n", ev.Revision)
	}
	return fmt.Appendf(b, "event: %s\ndata: %s\n\n", ev.Type, data)
}

// watchQuery reads the query of a watch as strictly as an observation's:
// resource, prefix or all=true, once, and nothing else. Only the
// authority's fields of the answer are set: Queue and the others are the
// handler's.
func watchQuery(rawQuery string) (authority.WatchOptions, error) {
	none := authority.WatchOptions{}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return none, badRequest("the query string is not valid: want ?resource=…, ?prefix=… or ?all=true")
	}
	for k := range q {
		if k != "resource" && k != "prefix" && k != "all" {
			return none, badRequest("unknown query parameter %q: a watch takes resource, prefix or all", clip.String(k, 32))
		}
	}
	r, p, a := q["resource"], q["prefix"], q["all"]
	switch {
	case len(r)+len(p)+len(a) != 1:
		return none, badRequest("want ?resource=…, ?prefix=… or ?all=true, once: got resource %d times, prefix %d times, all %d times", len(r), len(p), len(a))
	case len(r) == 1 && r[0] != "":
		return authority.WatchOptions{Resource: r[0]}, nil
	case len(p) == 1 && p[0] != "":
		return authority.WatchOptions{Prefix: p[0]}, nil
	case len(a) == 1 && a[0] == "true":
		return authority.WatchOptions{All: true}, nil
	case len(a) == 1:
		return none, badRequest("all=%q: the only value is true", clip.String(a[0], 32))
	}
	return none, badRequest("an empty resource or prefix: name the lock, or the start of the names to follow (every lock is all=true)")
}

// lastEventID reads the Last-Event-ID header of a resumed watch: none, or
// one revision as this gateway writes it (a positive decimal, no sign, no
// leading zero). 0: no header, start with the state.
func lastEventID(values []string) (int64, error) {
	switch len(values) {
	case 0:
		return 0, nil
	case 1:
	default:
		return 0, badRequest("%d Last-Event-ID headers: send one", len(values))
	}
	v := values[0]
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != v {
		return 0, badRequest("Last-Event-ID %q: want the id of an event this watch sent, a positive whole number", clip.String(v, 32))
	}
	return n, nil
}
