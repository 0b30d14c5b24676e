package client

import (
	"context"
	"fmt"
	"net/url"
	"time"
)

// LockState is what the gateway shows of one resource's lock: its holder,
// if any, and the waiters in the order they will be granted it.
type LockState struct {
	Resource string
	Revision int64 // the etcd revision of the observation
	Holder   *Contender
	Waiters  []Contender
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
// ctx bounds the request.
func (c *Client) Observe(ctx context.Context, resource string) (*LockState, error) {
	var out struct {
		Resource string          `json:"resource"`
		Revision int64           `json:"revision"`
		Holder   *contenderJSON  `json:"holder"`
		Waiters  []contenderJSON `json:"waiters"`
	}
	if _, err := c.do(ctx, call{method: "GET", path: "/v1/leases?resource=" + url.QueryEscape(resource), want: 200, out: &out}); err != nil {
		return nil, fmt.Errorf("observe %s: %w", resource, err)
	}
	st := &LockState{Resource: out.Resource, Revision: out.Revision}
	if out.Holder != nil {
		h := out.Holder.contender()
		st.Holder = &h
	}
	for _, w := range out.Waiters {
		st.Waiters = append(st.Waiters, w.contender())
	}
	return st, nil
}
