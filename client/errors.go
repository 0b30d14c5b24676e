package client

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Sentinels, for errors.Is. The first group names the gateway's problem
// kinds (docs/api.md, "Problems"); the second is the client's own.
var (
	ErrStaleToken          = errors.New("client: stale fencing token")             // stale-token, 409
	ErrTokenRequired       = errors.New("client: fencing token required")          // token-required, 428
	ErrBadRequest          = errors.New("client: bad request")                     // bad-request, 400
	ErrTokenRejected       = errors.New("client: token rejected by the authority") // token-rejected, 403
	ErrUnknownOperation    = errors.New("client: unknown operation")               // unknown-operation, 404
	ErrUnauthorized        = errors.New("client: unauthorized")                    // unauthorized, 401
	ErrForbidden           = errors.New("client: forbidden")                       // forbidden, 403
	ErrIdempotencyMismatch = errors.New("client: idempotency key reused")          // idempotency-mismatch, 422
	ErrPreconditionFailed  = errors.New("client: operation precondition failed")   // precondition-failed, 409
	ErrConstraint          = errors.New("client: constraint violated")             // constraint, 409
	ErrLocked              = errors.New("client: resource is locked")              // locked, 409
	ErrTooLarge            = errors.New("client: request too large")               // too-large, 413
	ErrInternal            = errors.New("client: gateway internal error")          // internal, 500
	ErrDeadlinePassed      = errors.New("client: business deadline passed")        // deadline-passed, 409
	ErrNoLock              = errors.New("client: resource has no lock")            // no-lock, 404
	ErrNotFound            = errors.New("client: no such endpoint")                // not-found, 404
	ErrMethodNotAllowed    = errors.New("client: method not allowed")              // method-not-allowed, 405
	ErrUnsupportedMedia    = errors.New("client: unsupported media type")          // unsupported-media-type, 415
	ErrUnsupportedEncoding = errors.New("client: unsupported content encoding")    // unsupported-encoding, 415
	ErrTooManyLeases       = errors.New("client: too many leases")                 // too-many-leases, 429
	// ErrApplication (application, the status the SQL raised): the
	// operation's statements refused the write by the application's own
	// rule (SQLSTATE PTxyz); Detail says which.
	ErrApplication = errors.New("client: refused by the application")
	// ErrUnavailable is a 503 (or a proxy's 502 or 504): PostgreSQL or etcd
	// unreachable, or the gateway itself. A write's outcome may be unknown:
	// retry it with the same Idempotency-Key.
	ErrUnavailable = errors.New("client: gateway unavailable")
	// ErrAuthorityHalted (authority-halted, 503, also ErrUnavailable): etcd
	// went back in time; the gateway refuses writes and leases until an
	// operator runs `fencegw epoch bump`.
	ErrAuthorityHalted = errors.New("client: token authority halted")
	// ErrTokenRetired (token-retired, 403, also ErrTokenRejected): the
	// token was signed by a key since retired (fencegw keys retire); it
	// will never write again: take a new lease.
	ErrTokenRetired = fmt.Errorf("client: token signed by a retired key: %w", ErrTokenRejected)

	// ErrLeaseLost: the gateway no longer knows the lease (lease-not-found,
	// 404): it expired, was released or revoked. Another holder may have
	// the lock.
	ErrLeaseLost = errors.New("client: lease lost")
	// ErrLeaseExpired: the lease's local deadline passed without a
	// successful keepalive. The gateway may still hold it for a while.
	ErrLeaseExpired = errors.New("client: lease expired")
	// ErrReleased: Release was called.
	ErrReleased = errors.New("client: lease released")
	// ErrUnexpectedResponse: an answer that is not the gateway's, such as a
	// proxy's HTML error page, or a body that does not decode.
	ErrUnexpectedResponse = errors.New("client: unexpected response")
	// ErrBadOptions: options refused before anything was sent.
	ErrBadOptions = errors.New("client: bad options")
)

// kindErrors maps a problem kind to its sentinel.
var kindErrors = map[string]error{
	"stale-token":            ErrStaleToken,
	"token-required":         ErrTokenRequired,
	"bad-request":            ErrBadRequest,
	"token-rejected":         ErrTokenRejected,
	"token-retired":          ErrTokenRetired,
	"unknown-operation":      ErrUnknownOperation,
	"unauthorized":           ErrUnauthorized,
	"forbidden":              ErrForbidden,
	"idempotency-mismatch":   ErrIdempotencyMismatch,
	"precondition-failed":    ErrPreconditionFailed,
	"constraint":             ErrConstraint,
	"locked":                 ErrLocked,
	"lease-not-found":        ErrLeaseLost,
	"too-large":              ErrTooLarge,
	"internal":               ErrInternal,
	"unavailable":            ErrUnavailable,
	"authority-halted":       ErrAuthorityHalted,
	"deadline-passed":        ErrDeadlinePassed,
	"no-lock":                ErrNoLock,
	"not-found":              ErrNotFound,
	"method-not-allowed":     ErrMethodNotAllowed,
	"unsupported-media-type": ErrUnsupportedMedia,
	"unsupported-encoding":   ErrUnsupportedEncoding,
	"too-many-leases":        ErrTooManyLeases,
	"application":            ErrApplication,
}

// statusError is the sentinel for a status whose kind is unknown or absent.
func statusError(status int) error {
	switch status {
	case 502, 503, 504:
		return ErrUnavailable
	}
	return nil
}

// ProblemError is an error answer of the gateway: an RFC 9457 problem
// document with fencegw's extensions. Status is the HTTP status of the
// answer; the other fields are the document's, as sent.
type ProblemError struct {
	Type           string
	Title          string
	Status         int
	Detail         string
	Resource       string
	Operation      string
	PresentedToken string
	CurrentToken   string
	// Outcome, on 503s: "not-applied" (nothing was written: retry freely)
	// or "unknown" (the write may have been applied: retry only with the
	// same Idempotency-Key).
	Outcome string
	// Role names the role of an operation with several resources whose
	// token was refused; Index the write of a batch that refused it (-1
	// when the problem concerns no one write).
	Role  string
	Index int
}

// Kind returns the suffix of Type after urn:fencegw:problem:, e.g.
// "stale-token"; "" for a problem type that is not fencegw's.
func (e *ProblemError) Kind() string {
	if len(e.Type) > len(problemTypePrefix) && e.Type[:len(problemTypePrefix)] == problemTypePrefix {
		return e.Type[len(problemTypePrefix):]
	}
	return ""
}

func (e *ProblemError) Error() string {
	msg := fmt.Sprintf("%d %s", e.Status, printable(cmp.Or(e.Kind(), e.Title, "problem"), 64))
	if e.Detail != "" {
		msg += ": " + printable(e.Detail, 512)
	}
	return msg
}

// Unwrap returns the sentinel of the problem's kind, and of its status:
// every 502, 503 and 504 is ErrUnavailable, whatever its kind.
func (e *ProblemError) Unwrap() []error {
	var errs []error
	if err, ok := kindErrors[e.Kind()]; ok {
		errs = append(errs, err)
	}
	if err := statusError(e.Status); err != nil && !slices.Contains(errs, err) {
		errs = append(errs, err)
	}
	return errs
}

// StaleTokenError is a write refused by the fence: the presented token is
// older than the resource's fence (or equal to it on a strict resource).
// Someone else has written with a newer token; stop working on Resource.
type StaleTokenError struct {
	Role      string // for an operation with several resources
	Resource  string
	Presented string
	Current   string
	Problem   *ProblemError
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("stale token %s for %s: the fence is at %s",
		printable(e.Presented, 64), printable(e.Resource, 256), printable(e.Current, 64))
}

// Unwrap returns the problem document, which is ErrStaleToken.
func (e *StaleTokenError) Unwrap() error { return e.Problem }

// LockedError is a lease request that ended with another holder, whose
// token is Holder ("" if the gateway could not tell).
type LockedError struct {
	Resource string
	Holder   string
	Problem  *ProblemError
}

func (e *LockedError) Error() string {
	if e.Holder == "" {
		return fmt.Sprintf("%s is locked", printable(e.Resource, 256))
	}
	return fmt.Sprintf("%s is locked by the holder of token %s", printable(e.Resource, 256), printable(e.Holder, 64))
}

// Unwrap returns the problem document, which is ErrLocked.
func (e *LockedError) Unwrap() error { return e.Problem }

// ResponseError is an error answer that is not a problem document, such as
// a proxy's HTML 502 page. Body is the beginning of the body, made
// printable.
type ResponseError struct {
	Status      int
	ContentType string
	Body        string
}

func (e *ResponseError) Error() string {
	ct := e.ContentType
	if ct == "" {
		ct = "no content type"
	}
	msg := fmt.Sprintf("%d (%s), not a problem document", e.Status, printable(ct, 64))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Unwrap returns ErrUnexpectedResponse and, for 502, 503 and 504,
// ErrUnavailable.
func (e *ResponseError) Unwrap() []error {
	if err := statusError(e.Status); err != nil {
		return []error{ErrUnexpectedResponse, err}
	}
	return []error{ErrUnexpectedResponse}
}
