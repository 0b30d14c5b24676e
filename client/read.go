package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// ReadResult is a fenced read's answer: the rows, and the fence each token
// was held to as the read saw it ("" when the resource was never written).
type ReadResult struct {
	Operation  string            `json:"operation"`
	Resource   string            `json:"resource"`
	Token      string            `json:"token"`
	Fence      string            `json:"fence"`
	Fences     []ReadFence       `json:"fences"`
	Statements []StatementResult `json:"statements"`
}

// ReadFence is one role's token and the fence it was held to.
type ReadFence struct {
	Role     string `json:"role"`
	Resource string `json:"resource"`
	Token    string `json:"token"`
	Fence    string `json:"fence"`
}

// Read runs a read operation of the policy (access: read) with args, fenced
// by the lease's token: the rows come back only while no newer token has
// written the resource; otherwise the error is a *StaleTokenError, and the
// lease's holder knows it was superseded before it decides anything on
// what it read. It sends nothing once the lease has ended.
func (l *Lease) Read(ctx context.Context, operation string, args any) (*ReadResult, error) {
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("read %s: not sent: %w", operation, err)
	}
	return l.c.Read(ctx, l.Token(), operation, args)
}

// Read is Lease.Read for a token held some other way (RoleTokens for an
// operation with several resources). Reads write nothing: retry at will.
func (c *Client) Read(ctx context.Context, token, operation string, args any) (*ReadResult, error) {
	if args == nil {
		args = struct{}{}
	}
	h := http.Header{}
	h.Set(TokenHeader, token)
	var res ReadResult
	if _, err := c.do(ctx, call{method: "POST", path: "/v1/reads/" + url.PathEscape(operation), header: h, body: args, want: 200, out: &res, resend: true}); err != nil {
		return nil, fmt.Errorf("read %s: %w", operation, err)
	}
	return &res, nil
}

// Check asks whether the lease's token is still current, without writing
// (Chubby's CheckSequencer): nil while no newer token has written its
// resource, a *StaleTokenError once one has. A holder about to act outside
// the database on what it decided (a call, a message) checks first; the
// answer is already old when it arrives, so the act itself must still be
// made safe (docs/concepts.md: what it guarantees, the outbox).
func (l *Lease) Check(ctx context.Context) error {
	if err := l.Err(); err != nil {
		return fmt.Errorf("check: not sent: %w", err)
	}
	return l.c.Check(ctx, l.Token(), l.resource)
}

// Check is Lease.Check for a token of resource held some other way.
func (c *Client) Check(ctx context.Context, token, resource string) error {
	h := http.Header{}
	h.Set(TokenHeader, token)
	body := map[string]string{"resource": resource}
	// The answer is read, though only its status tells: a 200 whose body
	// is not the gateway's (cut short, a proxy's) is no answer.
	var out struct {
		Fences []ReadFence `json:"fences"`
	}
	if _, err := c.do(ctx, call{method: "POST", path: "/v1/fences/check", header: h, body: body, want: 200, out: &out, resend: true}); err != nil {
		return fmt.Errorf("check %s: %w", resource, err)
	}
	return nil
}
