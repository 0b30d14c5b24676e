package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// WatchEvent is what a watch reports of a lock. A watch starts with one
// "state" event per lock (Holder nil: free), then "synced"; after that,
// each change in the order etcd made it: "granted", "value" (the holder
// published a new value), and an end: "released", "expired", "revoked",
// or "ended" (how is no longer known). "relist" means etcd forgot changes
// the watch had not seen yet (it was away too long): what the reader knew
// is void, and the state follows again. "error" ends the watch (Err).
type WatchEvent struct {
	Type     string
	Resource string
	// Revision is etcd's revision of the change (of the state, for state
	// and synced).
	Revision int64
	// Holder is the lock's holder, or the lease that ended; its TTL is
	// set in state events only.
	Holder *Contender
	// Transitions counts the lock's grants so far (Kubernetes'
	// leaseTransitions).
	Transitions int64
	// Permit is the slot the event is of, in a watch of a semaphore
	// (Resource names the slot); 0 otherwise.
	Permit int
	Err    error // for "error"
}

// Watch follows resource's lock (a semaphore's: each of its slots, as
// locks): its state, then every change, on the channel, until ctx ends
// (the channel is then closed). A stream that breaks (a gateway
// restarted, a proxy's timeout, a reader cut off for falling behind) is
// resumed where it broke, with Last-Event-ID, so no
// change is missed; a gateway that refuses the watch for good (403, 400)
// ends it with an "error" event. The first request's refusal is Watch's
// error. The reader should keep up: the gateway cuts off a stream whose
// reader falls far behind, and the watch then resumes.
func (c *Client) Watch(ctx context.Context, resource string) (<-chan WatchEvent, error) {
	return c.watch(ctx, "resource="+url.QueryEscape(resource))
}

// WatchPrefix is Watch of every lock whose name starts with prefix, among
// those the client may lease.
func (c *Client) WatchPrefix(ctx context.Context, prefix string) (<-chan WatchEvent, error) {
	return c.watch(ctx, "prefix="+url.QueryEscape(prefix))
}

// Reconnection backoff of a watch whose stream broke.
const (
	watchRetryMin = 100 * time.Millisecond
	watchRetryMax = 5 * time.Second
)

func (c *Client) watch(ctx context.Context, query string) (<-chan WatchEvent, error) {
	body, err := c.openWatch(ctx, query, "")
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	out := make(chan WatchEvent, 16)
	go func() { // owned by ctx
		defer close(out)
		var lastID string
		retry := watchRetryMin
		for {
			got, err := c.followWatch(ctx, body, &lastID, out)
			body.Close()
			if got {
				retry = watchRetryMin
			}
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, ErrUnexpectedResponse) {
				// Not the gateway's stream (a proxy's page, an event that is
				// none): a resumed one would meet it again. A stream that
				// broke is resumed.
				select {
				case out <- WatchEvent{Type: "error", Err: fmt.Errorf("watch: %w", err)}:
				case <-ctx.Done():
				}
				return
			}
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(retry):
				}
				retry = min(2*retry, watchRetryMax)
				if body, err = c.openWatch(ctx, query, lastID); err == nil {
					break
				}
				if final(err) {
					select {
					case out <- WatchEvent{Type: "error", Err: fmt.Errorf("watch: %w", err)}:
					case <-ctx.Done():
					}
					return
				}
			}
		}
	}()
	return out, nil
}

// final says whether a refused watch would be refused again: a 4xx but
// 408 and 429.
func final(err error) bool {
	var p *ProblemError
	return errors.As(err, &p) && p.Status >= 400 && p.Status < 500 && p.Status != http.StatusRequestTimeout && p.Status != http.StatusTooManyRequests
}

// openWatch starts a stream, resuming after lastID if it is set, on the
// preferred replica; a lost answer makes the next one preferred, for the
// watch's next attempt.
func (c *Client) openWatch(ctx context.Context, query, lastID string) (io.ReadCloser, error) {
	if c.baseErr != nil {
		return nil, c.baseErr
	}
	if c.optErr != nil {
		return nil, c.optErr
	}
	var body io.ReadCloser
	_, err := c.retry(ctx, call{}, func(base string) (http.Header, error) {
		var err error
		body, err = c.openWatchAt(ctx, base, query, lastID)
		return nil, err
	})
	return body, err
}

func (c *Client) openWatchAt(ctx context.Context, base, query, lastID string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/leases/watch?"+query, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream, application/problem+json")
	req.Header.Set("User-Agent", userAgent)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	if bearer := c.bearerToken(); bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, decodeResponse(resp.StatusCode, resp.Header, resp.Body, http.StatusOK, nil)
	}
	return resp.Body, nil
}

// watchEventJSON is an event's data as the gateway sends it.
type watchEventJSON struct {
	Type        string         `json:"type"`
	Resource    string         `json:"resource"`
	Revision    int64          `json:"revision"`
	Holder      *contenderJSON `json:"holder"`
	Transitions int64          `json:"transitions"`
	Permit      int            `json:"permit"`
}

// followWatch hands on the stream's events until it ends, keeping the
// last event ID; got says whether any event came.
func (c *Client) followWatch(ctx context.Context, body io.Reader, lastID *string, out chan<- WatchEvent) (got bool, _ error) {
	r := newSSEReader(body)
	for {
		m, err := r.next()
		if err != nil {
			return got, err
		}
		if m.Data == "" && m.Event == "" {
			*lastID = m.ID // progress: every change up to it was sent
			continue
		}
		var data watchEventJSON
		if json.Unmarshal([]byte(m.Data), &data) != nil || data.Type != m.Event {
			return got, fmt.Errorf("%w: a watch event that is not one: %q", ErrUnexpectedResponse, printable(m.Data, 100))
		}
		ev := WatchEvent{Type: data.Type, Resource: data.Resource, Revision: data.Revision, Transitions: data.Transitions, Permit: data.Permit}
		if data.Holder != nil {
			h := data.Holder.contender()
			ev.Holder = &h
		}
		select {
		case out <- ev:
		case <-ctx.Done():
			return got, ctx.Err()
		}
		got = true
		if m.ID != "" {
			*lastID = m.ID // after it is handed on: a resumed stream starts after what the reader has
		}
	}
}
