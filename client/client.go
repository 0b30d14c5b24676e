package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fencegw/fencegw/internal/reload"
)

// Client talks to a fencegw gateway: one replica, or several
// (NewReplicas) it fails over between. It is safe for concurrent use.
type Client struct {
	bases      []string     // the replicas' base URLs, in the order given
	preferred  atomic.Int64 // the index in bases of the replica asked first
	baseErr    error
	optErr     error // an option's (credentials.go)
	http       *http.Client
	bearer     string
	bearerFile *reload.Files[string] // WithBearerFile
	clock      Clock
	onRenewErr func(RenewFailure) // WithRenewFailures
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends requests with hc instead of http.DefaultClient.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithBearerToken sends Authorization: Bearer token on every request, for
// a gateway whose policy declares clients.
func WithBearerToken(token string) Option { return func(c *Client) { c.bearer = token } }

// WithClock makes the Client's leases measure time on clk instead of
// SystemClock.
func WithClock(clk Clock) Option { return func(c *Client) { c.clock = clk } }

// RenewFailure is a keepalive that failed and will be retried: the
// gateway unreachable, a 503, a proxy's page. It is the "danger to come"
// of a lease: renewed in time, nothing is lost; not, and the lease ends at
// Left from the failure. (A gateway's 404 ends the lease at once: Done.)
type RenewFailure struct {
	Resource string
	LeaseID  string
	Err      error
	Left     time.Duration // until the lease's local deadline
}

// WithRenewFailures calls f, on the lease's keepalive goroutine, for each
// keepalive that failed and will be retried: for a log line or a metric of
// the job's own (the gateway counts only the renewals that reach it). f
// must return promptly; the next keepalive waits for it.
func WithRenewFailures(f func(RenewFailure)) Option { return func(c *Client) { c.onRenewErr = f } }

// New returns a Client of the gateway at baseURL, e.g.
// "http://127.0.0.1:8080" or "https://gw.example.org" (see WithTLSFiles).
// A malformed URL surfaces as the error of the first call.
func New(baseURL string, opts ...Option) *Client {
	return NewReplicas([]string{baseURL}, opts...)
}

// NewReplicas returns a Client of a gateway served by several replicas,
// asked in the order given: a request whose answer is lost (the replica
// unreachable, its connection broken, a 502, 503 or 504) is sent again to
// the next one, when it is safe to send it again (see Client.Write), and
// that replica is asked first from then on. An empty list, or a malformed
// URL, surfaces as the error of the first call.
func NewReplicas(baseURLs []string, opts ...Option) *Client {
	c := &Client{http: http.DefaultClient, clock: SystemClock}
	for _, u := range baseURLs {
		c.bases = append(c.bases, strings.TrimRight(u, "/"))
		// The URL stays out of the error: it may hold a password.
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			c.baseErr = fmt.Errorf("%w: a base URL is not http(s)://host[:port][/path]", ErrBadOptions)
		}
	}
	if len(c.bases) == 0 {
		c.baseErr = fmt.Errorf("%w: no gateway URL", ErrBadOptions)
	}
	for _, opt := range opts {
		opt(c)
	}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	if c.clock == nil {
		c.clock = SystemClock
	}
	return c
}

// call is one request to the gateway and the answer it expects.
type call struct {
	method string
	path   string      // from the base URL, already escaped
	header http.Header // extra request headers
	body   any         // marshalled as JSON; nil sends no body
	want   int         // the success status
	out    any         // decoded from a success body; nil ignores it
	// resend allows sending the request again after an answer was lost
	// (retry.go): it writes nothing, or carries an Idempotency-Key.
	resend bool
	// resent, if set, is told whether the request was sent more than once.
	resent *bool
}

// do sends k, to one replica after another while its answer is lost and
// k may be sent again, and returns the response headers of a success, or
// the error the answer describes. ctx bounds the whole exchange.
func (c *Client) do(ctx context.Context, k call) (http.Header, error) {
	if c.baseErr != nil {
		return nil, c.baseErr
	}
	if c.optErr != nil {
		return nil, c.optErr
	}
	var body []byte
	if k.body != nil {
		b, err := json.Marshal(k.body)
		if err != nil {
			return nil, fmt.Errorf("encoding the request: %w", err)
		}
		body = b
	}
	return c.retry(ctx, k, func(base string) (http.Header, error) { return c.send(ctx, base, k, body) })
}

// send sends k, with body, once to the replica at base.
func (c *Client) send(ctx context.Context, base string, k call, body []byte) (http.Header, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, k.method, base+k.path, r)
	if err != nil {
		return nil, err
	}
	for name, values := range k.header {
		req.Header[name] = values
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	req.Header.Set("User-Agent", userAgent)
	if bearer := c.bearerToken(); bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() {
		// Drain a little so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
	}()
	if err := decodeResponse(resp.StatusCode, resp.Header, resp.Body, k.want, k.out); err != nil {
		return nil, err
	}
	return resp.Header, nil
}
