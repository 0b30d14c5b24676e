package client

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Header names of the write API.
const (
	TokenHeader       = "Fencing-Token"
	IdempotencyHeader = "Idempotency-Key"
	ReplayedHeader    = "Idempotent-Replayed"
)

// Result is an applied write: the resource the operation derived and the
// token the gateway accepted (for an operation with several resources, a
// fence per role instead), and per statement the rows affected and any
// rows returned.
type Result struct {
	Operation  string            `json:"operation"`
	Resource   string            `json:"resource"`
	Token      string            `json:"token"`
	Fences     []FenceResult     `json:"fences"`
	Statements []StatementResult `json:"statements"`
	// Replayed is true when the gateway answered a retry with the stored
	// response of the write's first execution (Idempotent-Replayed: true):
	// the write ran once, earlier.
	Replayed bool `json:"-"`
}

// FenceResult is one role's fence in a Result.
type FenceResult struct {
	Role     string `json:"role"`
	Resource string `json:"resource"`
	Token    string `json:"token"`
}

// StatementResult is the outcome of one statement of an operation. Rows is
// the JSON array of returned rows, nil for statements that return none.
type StatementResult struct {
	RowsAffected int64           `json:"rows_affected"`
	Rows         json.RawMessage `json:"rows,omitempty"`
}

// WriteOption configures one write.
type WriteOption func(*writeOptions)

type writeOptions struct {
	key             string
	notAfter        time.Time
	contextDeadline bool
}

// NotAfterHeader carries a write's business deadline.
const NotAfterHeader = "Fencing-Not-After"

// WithNotAfter makes the write apply only if it reaches PostgreSQL by t,
// by the database's clock: a write prepared for a window (a cut-off, a
// job's slot) must not land after it, however long it was delayed. Past
// t it is refused with a *ProblemError of type deadline-passed, and
// nothing is written.
func WithNotAfter(t time.Time) WriteOption {
	return func(o *writeOptions) { o.notAfter = t }
}

// WithContextDeadline is WithNotAfter with the deadline of the write's
// ctx, if it has one.
func WithContextDeadline() WriteOption {
	return func(o *writeOptions) { o.contextDeadline = true }
}

// WithIdempotencyKey sends key as the write's Idempotency-Key instead of a
// new random one. Reuse a key to retry a write whose outcome is unknown
// (a 503, a broken connection): it runs at most once.
func WithIdempotencyKey(key string) WriteOption {
	return func(o *writeOptions) { o.key = key }
}

// NewIdempotencyKey returns a new random key of at least 128 bits, in
// base32: printable, as the header requires.
func NewIdempotencyKey() string { return rand.Text() }

// Write sends operation with args, fenced by the lease's token. It sends
// nothing, and returns an error that is ErrReleased, ErrLeaseLost or
// ErrLeaseExpired, once the lease has ended or is past its local deadline.
// A write already sent is not recalled when the lease ends: the fence
// decides its fate. See Client.Write for the rest.
func (l *Lease) Write(ctx context.Context, operation string, args any, opts ...WriteOption) (*Result, error) {
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("write %s: not sent: %w", operation, err)
	}
	return l.c.Write(ctx, l.Token(), operation, args, opts...)
}

// Write sends operation with args (a value encoding/json makes an object
// of; json.RawMessage for JSON at hand), fenced by token, for callers that
// hold a token some other way, such as FENCING_TOKEN under `fencegw lock`.
// For an operation with several resources, token is RoleTokens of them.
// Each call gets a new random Idempotency-Key unless WithIdempotencyKey
// gives one, and is sent again under it, to the next replica, while its
// answer is lost (a broken connection, a 502, a 503 whatever its outcome,
// a 504), a few times: it applies once at most, and a retry of a write
// that did apply is answered with its first answer (Result.Replayed). A
// final answer (applied, or refused) is never sent again. ctx bounds the
// request and its retries; the gateway finishes a write it has started
// even if ctx ends.
//
// A refusal is an error from the gateway: errors.As a *StaleTokenError
// (errors.Is ErrStaleToken) when a newer token has written, a
// *ProblemError for the others. When no attempt got a final answer, the
// error is ErrUnavailable or the transport's, and the outcome is unknown
// unless a *ProblemError says "not-applied" (it says so only when no
// attempt may have applied): retry with WithIdempotencyKey of the same
// key, or read the state.
func (c *Client) Write(ctx context.Context, token, operation string, args any, opts ...WriteOption) (*Result, error) {
	var o writeOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.key == "" {
		o.key = NewIdempotencyKey()
	}
	if args == nil {
		args = struct{}{}
	}
	h := http.Header{}
	if token != "" {
		h.Set(TokenHeader, token)
	}
	h.Set(IdempotencyHeader, `"`+o.key+`"`) // an RFC 8941 string
	if d, ok := ctx.Deadline(); ok && o.contextDeadline && (o.notAfter.IsZero() || d.Before(o.notAfter)) {
		o.notAfter = d
	}
	if !o.notAfter.IsZero() {
		h.Set(NotAfterHeader, o.notAfter.UTC().Format(time.RFC3339Nano))
	}
	var res Result
	got, err := c.do(ctx, call{method: "POST", path: "/v1/ops/" + url.PathEscape(operation), header: h, body: args, want: 200, out: &res, resend: true})
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", operation, err)
	}
	res.Replayed = got.Get(ReplayedHeader) == "true"
	return &res, nil
}

// RoleTokens is the Fencing-Token field of an operation with several
// resources: an RFC 8941 dictionary of each role's token, e.g.
// from="1:42", to="1:57".
func RoleTokens(tokens map[string]string) string {
	roles := make([]string, 0, len(tokens))
	for role := range tokens {
		roles = append(roles, role)
	}
	slices.Sort(roles)
	parts := make([]string, len(roles))
	for i, role := range roles {
		parts[i] = role + "=" + strconv.Quote(tokens[role])
	}
	return strings.Join(parts, ", ")
}

// Unsigned returns a token without its signature ("1:42" of
// "1:42:SIGNATURE"): its place in the order, which is how the gateway
// shows tokens in answers, problems and observations. Only the signed
// token is a capability.
func Unsigned(token string) string {
	e, rest, ok := strings.Cut(token, ":")
	if !ok {
		return token
	}
	r, _, _ := strings.Cut(rest, ":")
	return e + ":" + r
}
