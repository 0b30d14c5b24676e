package client

import (
	"context"
	"fmt"
)

// The operator's verbs: for a client the policy declares with operations
// ["*"]. Each takes a reason, recorded in the gateway's lock history with
// the client's name, and with DryRun shows what it would do and changes
// nothing.

// RevokeRequest names the lease to revoke: the one holding Resource's
// lock, or LeaseID (holding or waiting); one of the two. The holder's
// fence moves past its token too, so that its next write is refused,
// unless KeepFence: then it writes until a successor writes.
type RevokeRequest struct {
	Resource  string `json:"resource,omitempty"`
	LeaseID   string `json:"lease_id,omitempty"`
	Reason    string `json:"reason"`
	DryRun    bool   `json:"dry_run,omitempty"`
	KeepFence bool   `json:"keep_fence,omitempty"`
}

// Revocation is the lease revoked (or, with DryRun, that would be).
type Revocation struct {
	Lease struct {
		LeaseID  string `json:"lease_id"`
		Resource string `json:"resource"`
		Token    string `json:"token"` // E:R, unsigned; "" for a contender in a semaphore's line, no slot yet
		Client   string `json:"client,omitempty"`
		Waiting  bool   `json:"waiting,omitempty"`
	} `json:"lease"`
	Revoked bool `json:"revoked"`
	DryRun  bool `json:"dry_run,omitempty"`
	// Fence is the holder's fence before and after it was moved past the
	// holder's token; nil with KeepFence, or for a lease that held
	// nothing. Advanced is false when it was past already. Before is
	// empty when the resource had no fence (never written).
	Fence *struct {
		Before   string `json:"before"`
		Fence    string `json:"fence"`
		Advanced bool   `json:"advanced"`
	} `json:"fence,omitempty"`
}

// Revoke revokes a lease whoever owns it: its lock passes on, and its
// holder's next write is refused (unless KeepFence). ctx bounds the
// request.
func (c *Client) Revoke(ctx context.Context, req RevokeRequest) (*Revocation, error) {
	var out Revocation
	if _, err := c.do(ctx, call{method: "POST", path: "/v1/admin/leases/revoke", body: req, want: 200, out: &out}); err != nil {
		return nil, fmt.Errorf("revoke: %w", err)
	}
	return &out, nil
}

// AdvanceRequest names the resource whose fence to advance.
type AdvanceRequest struct {
	Resource string `json:"resource"`
	Reason   string `json:"reason"`
	DryRun   bool   `json:"dry_run,omitempty"`
}

// FenceAdvance is a fence before and after an advance (with DryRun: would
// be after). Advanced is false when the fence was past every token issued
// already.
type FenceAdvance struct {
	Resource string `json:"resource"`
	Before   string `json:"before"` // empty: no fence yet (never written)
	Fence    string `json:"fence"`
	Advanced bool   `json:"advanced"`
	Holder   string `json:"holder,omitempty"` // the token cut off; "" when nobody held the lock
	Waiting  int64  `json:"waiting"`
	DryRun   bool   `json:"dry_run,omitempty"`
}

// AdvanceFence moves a resource's fence past every token issued so far:
// every current holder is refused at its next write, while the leases in
// line and later grants write as usual. ctx bounds the request.
func (c *Client) AdvanceFence(ctx context.Context, req AdvanceRequest) (*FenceAdvance, error) {
	var out FenceAdvance
	if _, err := c.do(ctx, call{method: "POST", path: "/v1/admin/fences/advance", body: req, want: 200, out: &out}); err != nil {
		return nil, fmt.Errorf("advance fence: %w", err)
	}
	return &out, nil
}
