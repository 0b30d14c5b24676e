package client

import (
	"context"
	"fmt"
)

// SetValue publishes value as the value of the lock the lease holds (a
// leader's address, its term's metadata): Observe and Watch show it, with
// no new grant. Only while the lease holds its lock: a lease that waits,
// or is gone, gets ErrLeaseLost, and nothing changes. ctx bounds the
// request.
func (l *Lease) SetValue(ctx context.Context, value string) error {
	if err := l.Err(); err != nil {
		return fmt.Errorf("set value of lease %s: %w", l.id, err)
	}
	body := struct {
		Value string `json:"value"`
	}{value}
	if _, err := l.c.do(ctx, call{method: "PATCH", path: leasePath(l.id), body: body, want: 204, resend: true}); err != nil {
		return fmt.Errorf("set value of lease %s: %w", l.id, err)
	}
	return nil
}
