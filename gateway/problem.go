package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/outcome"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// requestInstancePrefix makes a problem's instance from its request id.
const requestInstancePrefix = "urn:fencegw:request:"

// instanceOf is the instance of the request ctx belongs to, "" outside
// one.
func instanceOf(ctx context.Context) string {
	if e := accessOf(ctx); e.id != "" {
		return requestInstancePrefix + e.id
	}
	return ""
}

// problemTypePrefix makes the RFC 9457 type URIs; the suffix names the case.
const problemTypePrefix = "urn:fencegw:problem:"

// Problem is an RFC 9457 problem document with fencegw's extensions.
type Problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail,omitempty"`
	Resource  string `json:"resource,omitempty"`
	Operation string `json:"operation,omitempty"`
	// Role names the role of a multi-resource operation whose token was
	// refused; Index the write of a batch that refused the batch.
	Role           string `json:"role,omitempty"`
	Index          *int   `json:"index,omitempty"`
	PresentedToken string `json:"presented_token,omitempty"`
	CurrentToken   string `json:"current_token,omitempty"`
	// Outcome, on 503s: "not-applied" (safe to retry as is) or "unknown"
	// (retry only with the same Idempotency-Key).
	Outcome string `json:"outcome,omitempty"`
	// Instance names the request (its X-Request-Id), as the access log
	// does.
	Instance string `json:"instance,omitempty"`

	// writeOperation is, when one write refused a batch, that write's
	// operation: the document names the write by Index, and the audit
	// and the access log record what was refused.
	writeOperation string
}

// refusedOperation is the operation a refusal is recorded under: the
// write's that refused a batch, else the request's.
func (p *Problem) refusedOperation() string {
	if p.writeOperation != "" {
		return p.writeOperation
	}
	return p.Operation
}

// Kind returns the type suffix, e.g. "stale-token".
func (p *Problem) Kind() string { return p.Type[len(problemTypePrefix):] }

// maxEchoedName bounds an operation or role name a problem echoes: a
// policy's names are at most 63 bytes.
const maxEchoedName = 64

// problemScope is what the handler knows about the request when it fails.
type problemScope struct {
	Resource  string
	Operation string
	Role      string
	Presented tokens.Token
	Keyed     bool // the request carried an Idempotency-Key
}

// problemFor maps an error to its problem document. It is the only place
// where errors become HTTP statuses.
func problemFor(err error, scope problemScope) Problem {
	// The scope may be the client's own invalid input (a resource or an
	// operation name of a megabyte), echoed in the answer and the access
	// log: clipped, past the longest valid one.
	p := Problem{
		Resource: clip.String(scope.Resource, tokens.MaxResourceLen), Operation: clip.String(scope.Operation, maxEchoedName),
		Role: clip.String(scope.Role, maxEchoedName), Detail: publicDetail(err.Error()),
	}
	if !scope.Presented.IsZero() {
		p.PresentedToken = scope.Presented.Unsigned().String()
	}
	var (
		stale    *fence.StaleTokenError
		rejected *tokens.RejectedError
		locked   *authority.LockedError
		precond  *fence.PreconditionError
		constr   *fence.ConstraintError
		mismatch *fence.KeyMismatchError
		inBatch  *fence.WriteError
		app      *applicationError
		deadline *fence.DeadlineError
	)
	if errors.As(err, &inBatch) {
		p.Index = &inBatch.Index
		p.Operation = "" // the batch's: the index names the write
		p.writeOperation = clip.String(inBatch.Operation, maxEchoedName)
	}
	switch {
	case errors.As(err, &app):
		p.setApplication(app)
	case errors.As(err, &stale):
		p.set("stale-token")
		p.Resource, p.Role = stale.Resource, stale.Role
		p.PresentedToken, p.CurrentToken = stale.Presented.Unsigned().String(), stale.Current.Unsigned().String()
	case errors.As(err, &deadline):
		p.set("deadline-passed")
		p.Detail = deadlineDetail(deadline.NotAfter, deadline.At)
	case errors.Is(err, ErrTokenRequired):
		p.set("token-required")
	case errors.As(err, &rejected) && rejected.Retired:
		p.set("token-retired")
		p.PresentedToken = rejected.Presented.Unsigned().String()
	case errors.As(err, &rejected):
		p.set("token-rejected")
		p.PresentedToken = rejected.Presented.Unsigned().String()
	case errors.Is(err, ErrUnauthorized):
		p.set("unauthorized")
	case errors.Is(err, ErrForbidden), errors.Is(err, policy.ErrLeaseNotAllowed):
		p.set("forbidden")
	case errors.Is(err, ErrUnknownOperation):
		p.set("unknown-operation")
	case errors.As(err, &precond):
		p.set("precondition-failed")
	case errors.As(err, &mismatch), errors.Is(err, authority.ErrKeyReused):
		p.set("idempotency-mismatch")
	case errors.As(err, &constr):
		p.set("constraint")
	case errors.As(err, &locked):
		p.set("locked")
		p.Resource = locked.Resource
		if !locked.Holder.IsZero() {
			p.CurrentToken = locked.Holder.Unsigned().String()
		}
	case errors.Is(err, authority.ErrHeldTooLong):
		p.set("lease-not-found")
		p.Detail = "the lease was held past its resource's max_hold and is revoked: stop writing; take a new lease to go on"
	case errors.Is(err, authority.ErrLeaseNotFound), errors.Is(err, authority.ErrNotOwner):
		// Another client's lease is answered like an unknown one: whether
		// a lease ID exists is none of the asker's business.
		p.set("lease-not-found")
		p.Detail = "no such lease of yours: it expired, was released, or never was"
	case errors.Is(err, authority.ErrNoLock):
		p.set("no-lock")
	case errors.Is(err, ErrNoRoute):
		p.set("not-found")
	case errors.Is(err, ErrMethod):
		p.set("method-not-allowed")
	case errors.Is(err, authority.ErrTooManyLeases):
		p.set("too-many-leases")
	case errors.Is(err, ErrMediaType):
		p.set("unsupported-media-type")
	case errors.Is(err, ErrContentEncoding):
		p.set("unsupported-encoding")
	case errors.Is(err, ErrBodyTooLarge):
		p.set("too-large")
	case errors.Is(err, ErrBadRequest), errors.Is(err, tokens.ErrMalformed), errors.Is(err, policy.ErrBadArgs),
		errors.Is(err, fence.ErrConflict), errors.Is(err, fence.ErrValue),
		errors.Is(err, tokens.ErrBadResource), errors.Is(err, authority.ErrBadTTL), errors.Is(err, authority.ErrBadValue),
		errors.Is(err, authority.ErrBadLeaseID), errors.Is(err, authority.ErrBadPermits), errors.Is(err, policy.ErrUnknownLease):
		p.set("bad-request")
	case errors.Is(err, tokens.ErrHalted):
		p.set("authority-halted")
		if errors.Is(err, fence.ErrKeyInFlight) {
			var halted *tokens.HaltedError
			if errors.As(err, &halted) {
				p.Detail = publicDetail(halted.Error())
			}
			p.Detail += keyInFlightDetail
		}
	case errors.Is(err, ErrOverloaded):
		p.set("unavailable")
		switch {
		case scope.Operation == "":
			p.Detail = "the gateway is at its limit of lease calls in progress: retry"
		case errors.Is(err, fence.ErrKeyInFlight):
			p.Detail = "the gateway is at its limit of writes in flight; this attempt was not applied" + keyInFlightDetail
		default:
			p.Detail = "the gateway is at its limit of writes in flight; nothing was written: retry"
		}
	case errors.Is(err, ErrTooManyConnections):
		p.set("unavailable")
		p.Detail = "the gateway is at its limit of client connections (--max-connections); this connection's requests were not read, nothing of them was applied: retry on a new connection, later or on another replica"
	case errors.Is(err, ErrShuttingDown):
		p.set("unavailable")
		p.Detail = "the gateway is shutting down: no lease was granted and none is waiting; retry, another replica will answer"
	case errors.Is(err, fence.ErrUnavailable), errors.Is(err, authority.ErrUnavailable), errors.Is(err, ErrNotReady):
		// The cause (connection strings, server messages) stays in the log.
		p.set("unavailable")
		p.Detail = "PostgreSQL or etcd is unavailable; nothing was written: retry"
		switch {
		case errors.Is(err, fence.ErrKeyInFlight):
			p.Detail = "PostgreSQL or etcd is unavailable; this attempt was not applied" + keyInFlightDetail
		case errors.Is(err, fence.ErrOutcomeUnknown):
			what := "the connection to PostgreSQL failed after the write was sent: it may have been applied"
			if errors.As(err, new(*fence.CommitWarningError)) {
				// The warning's text stays in the log.
				what = "PostgreSQL committed the write but warned while committing (a cancelled wait for synchronous replication, say): a failover can lose it"
			}
			p.Detail = what + "; retry only with the same Idempotency-Key"
			if !scope.Keyed {
				p.Detail = what + "; find out before writing it again (writes sent with an Idempotency-Key can be retried safely)"
			}
		case errors.Is(err, authority.ErrKeysSealed):
			p.Detail = "a signing key in service does not open here (the gateway's log names it), so this replica cannot tell the token from a forgery; nothing was written: retry"
		}
	default:
		// Internal details (SQL, stack) stay in the log.
		p.set("internal")
		p.Detail = "the gateway failed to handle the request; see its log"
	}
	if p.Status == http.StatusServiceUnavailable {
		// What became of the request, as its error declares.
		p.Outcome = wireOutcome(outcome.Of(err))
	}
	return p
}

// wireOutcome is an outcome as a problem's outcome field says it: only
// the two a 503 can have.
func wireOutcome(o outcome.Outcome) string {
	if o == outcome.Unknown {
		return "unknown"
	}
	return "not-applied"
}

// keyInFlightDetail ends the detail of a keyed request that this attempt
// did not apply while another attempt with its key may still.
const keyInFlightDetail = "; an earlier attempt with this Idempotency-Key may still be applied: retry only with the same key"

// goPackages are the prefixes Go errors carry ("fence: stale token …"):
// they name fencegw's packages, which mean nothing to a client.
var goPackages = []string{"gateway", "fence", "policy", "tokens", "authority", "tlsfiles", "jwtauth"}

// publicDetail is an error's text without its Go package prefixes, at its
// start and after each ": ".
func publicDetail(msg string) string {
	parts := strings.Split(msg, ": ")
	kept := parts[:0]
	for _, part := range parts {
		if !slices.Contains(goPackages, part) {
			kept = append(kept, part)
		}
	}
	return strings.Join(kept, ": ")
}

func (p *Problem) set(kind string) {
	t := problemTypeOf(kind)
	p.Status, p.Type, p.Title = t.Status, problemTypePrefix+t.Kind, t.Title
}

// setCustom fills p with a kind the policy defines (sql_errors).
func (p *Problem) setCustom(status int, kind, title string) {
	p.Status, p.Type, p.Title = status, problemTypePrefix+kind, title
}

// writeProblem answers with the problem for err, counts and logs it.
func (g *Gateway) writeProblem(w http.ResponseWriter, r *http.Request, err error, scope problemScope) Problem {
	err = g.mapSQLError(err)
	p := problemFor(err, scope)
	gone := errors.Is(err, context.Canceled) && r.Context().Err() != nil
	g.metrics.countProblem(p.Kind(), gone)
	level := slog.LevelInfo
	switch {
	case errors.Is(err, ErrOverloaded):
		level = slog.LevelWarn // floods come exactly when the gateway is busiest
	case gone:
		// The client went away (a lease wait given up): its business.
	case p.Status >= 500:
		level = slog.LevelError
	}
	e := accessOf(r.Context())
	p.Instance = instanceOf(r.Context())
	e.level, e.err, e.outcome = level, err, p.Kind()
	e.operation, e.resource, e.token = p.refusedOperation(), p.Resource, p.PresentedToken
	w.Header()["Content-Type"] = problemContentType
	switch p.Status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="fencegw"`)
	case http.StatusUnsupportedMediaType:
		// RFC 9110 §15.5.16: the content codings the gateway accepts.
		// True of both 415s, and harmless on one about Content-Type.
		w.Header().Set("Accept-Encoding", "identity")
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(p.Status)
	_, _ = w.Write(renderProblem(p))
	return p
}

// renderProblem is the body of a problem document: the same bytes whether
// sent now or stored as a key's outcome and replayed.
func renderProblem(p Problem) []byte {
	b, _ := json.Marshal(p) // plain strings and ints: cannot fail
	return append(b, '\n')
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
