package client

import (
	"context"
	"fmt"
	"net/url"
	"time"
)

// LockState is what the gateway shows of one resource's lock: its holder,
// if any, and the waiters in the order they will be granted it. A
// semaphore's (Permits > 0) has no Holder: Holders lists its held slots,
// and its Waiters carry no Token (a place in line is none).
type LockState struct {
	Resource string
	Revision int64 // the etcd revision of the observation
	Holder   *Contender
	Waiters  []Contender // the first 99 in line
	Waiting  int64       // everyone waiting, shown or not
	// Transitions counts the lock's grants so far (a semaphore's: every
	// slot's).
	Transitions int64
	// Permits is a semaphore's number of permits; 0 for a lock.
	Permits int
	Holders []PermitHolder // a semaphore's held slots, by permit
}

// PermitHolder is one held slot of a semaphore.
type PermitHolder struct {
	Permit   int
	Resource string // the slot's, <semaphore>#<permit>
	Contender
	Transitions int64 // the slot's grants so far
}

// Contender is a holder or a waiter of a lock, as any client may see it:
// its token without the signature (its place in the order, no
// capability), its remaining TTL and its value.
type Contender struct {
	Token string
	TTL   time.Duration // left, as the gateway saw it
	Value string        // AcquireOptions.Value of its lease
}

type contenderJSON struct {
	Token string `json:"token"`
	TTL   int64  `json:"ttl"`
	Value string `json:"value"`
}

func (c contenderJSON) contender() Contender {
	return Contender{Token: c.Token, TTL: time.Duration(c.TTL) * time.Second, Value: c.Value}
}

// Observe returns the state of resource's lock: for leader election,
// followers observe who leads (and its Value) without taking the lock.
// Of a semaphore, it returns the holders of its slots and its line.
// ctx bounds the request.
func (c *Client) Observe(ctx context.Context, resource string) (*LockState, error) {
	var out struct {
		Resource    string          `json:"resource"`
		Revision    int64           `json:"revision"`
		Holder      *contenderJSON  `json:"holder"`
		Waiters     []contenderJSON `json:"waiters"`
		Waiting     int64           `json:"waiting"`
		Transitions int64           `json:"transitions"`
		Permits     int             `json:"permits"`
		Holders     []struct {
			Permit   int    `json:"permit"`
			Resource string `json:"resource"`
			contenderJSON
			Transitions int64 `json:"transitions"`
		} `json:"holders"`
	}
	if _, err := c.do(ctx, call{method: "GET", path: "/v1/leases?resource=" + url.QueryEscape(resource), want: 200, out: &out, resend: true}); err != nil {
		return nil, fmt.Errorf("observe %s: %w", resource, err)
	}
	st := &LockState{Resource: out.Resource, Revision: out.Revision, Waiting: out.Waiting, Transitions: out.Transitions, Permits: out.Permits}
	if out.Holder != nil {
		h := out.Holder.contender()
		st.Holder = &h
	}
	for _, w := range out.Waiters {
		st.Waiters = append(st.Waiters, w.contender())
	}
	for _, h := range out.Holders {
		st.Holders = append(st.Holders, PermitHolder{Permit: h.Permit, Resource: h.Resource, Contender: h.contender(), Transitions: h.Transitions})
	}
	return st, nil
}
