package gateway

import "net/http"

// problemType is one kind of problem document the gateway answers: its
// status and title. The table is the one place both problemFor and the
// OpenAPI document read them from.
type problemType struct {
	Kind   string
	Status int
	Title  string
	// When says, for the OpenAPI document, what the problem means.
	When string
}

var problemTypes = []problemType{
	{"bad-request", http.StatusBadRequest, "Bad request", "malformed token, bad JSON, unknown, missing or mistyped argument, argument out of bounds, unknown or repeated role, two roles on one resource, one resource under two tokens in a batch, more than 100 writes in a batch"},
	{"unauthorized", http.StatusUnauthorized, "Unauthorized", "no credential, or one that failed a check (the detail names it): an unknown bearer token, a client certificate that is not valid or names no client, a JWT that is not (the policy declares clients, or the gateway asks for client certificates)"},
	{"token-rejected", http.StatusForbidden, "Token rejected by the authority", "a token the gateway did not issue for this resource and client, of another epoch, not the live holder's (validation: holder), or a revision in the future (validation: revision)"},
	{"token-retired", http.StatusForbidden, "Token signed by a retired key", "a token the gateway issued, signed by a key since retired (fencegw keys retire): refused for good, take a new lease"},
	{"forbidden", http.StatusForbidden, "Forbidden", "the client may not call the operation"},
	{"unknown-operation", http.StatusNotFound, "Unknown operation", "no such operation in the policy"},
	{"lease-not-found", http.StatusNotFound, "Lease not found", "the lease expired, was released, never was, or is another client's"},
	{"not-found", http.StatusNotFound, "No such endpoint", "no such path"},
	{"no-lock", http.StatusNotFound, "Resource has no lock", "an operator's revoke of a resource nobody holds: nothing was revoked"},
	{"method-not-allowed", http.StatusMethodNotAllowed, "Method not allowed", "the path does not take the method; Allow lists those it does"},
	{"stale-token", http.StatusConflict, "Stale fencing token", "the token is older than the resource's fence (or equal, on a strict resource): a newer holder has written"},
	{"deadline-passed", http.StatusConflict, "Business deadline passed", "the write's Fencing-Not-After had passed by the database's clock when it reached PostgreSQL: nothing was written; it will not apply later"},
	{"precondition-failed", http.StatusConflict, "Operation precondition failed", "a statement's expect_rows was not met (e.g. an insufficient balance)"},
	{"constraint", http.StatusConflict, "Constraint violated", "a PostgreSQL constraint refused the write"},
	{"locked", http.StatusConflict, "Resource is locked", "the lease wait ended with another holder (current_token names it, when there is one to name)"},
	{"too-large", http.StatusRequestEntityTooLarge, "Request body too large", "the body is larger than the gateway's --max-body"},
	{"unsupported-media-type", http.StatusUnsupportedMediaType, "Unsupported media type", "a lease request or batch not sent as application/json"},
	{"unsupported-encoding", http.StatusUnsupportedMediaType, "Unsupported content encoding", "a body sent with a Content-Encoding other than identity: the gateway decompresses nothing (the answer says so: Accept-Encoding: identity)"},
	{"idempotency-mismatch", http.StatusUnprocessableEntity, "Idempotency key reused with another request", "the Idempotency-Key was used with other arguments"},
	{"token-required", http.StatusPreconditionRequired, "Fencing token required", "no Fencing-Token header, or no token for one of the operation's roles"},
	{"too-many-leases", http.StatusTooManyRequests, "Too many leases", "the client holds --max-leases-per-client leases already"},
	{"internal", http.StatusInternalServerError, "Internal error", "the gateway failed; its log says why"},
	{"unavailable", http.StatusServiceUnavailable, "Service unavailable", "PostgreSQL or etcd unreachable, or the gateway at a limit; outcome says whether the write may have been applied (not-applied, unknown)"},
	{"authority-halted", http.StatusServiceUnavailable, "Token authority halted", "etcd went back in time: writes are refused until an operator runs fencegw epoch bump"},
}

// fenceRefusals are the kinds that mean the fence refused a write: its
// holder's turn was over, or it never had one. stale-token is the fence
// row's own refusal; token-rejected is the same decision taken by the
// authority before the transaction (under validation holder, a holder
// whose lease ended is refused so; an unissued token, from another epoch
// or resource or forged, claims a turn nobody gave), and so is
// token-retired (a token whose key was retired: its turn is over for the
// authority, as for an old epoch's). Every other refusal
// is about the request itself (malformed, unauthenticated, no such path
// or operation, too large), the gateway's limits, or the application's
// rules (precondition-failed, constraint): none says a holder wrote out
// of turn. The audit records these kinds, and the status page charts them.
var fenceRefusals = map[string]bool{"stale-token": true, "token-rejected": true, "token-retired": true}

// ProblemTypes lists the type URI of every problem document the gateway
// answers (urn:fencegw:problem:<kind>), in its table's order, as its
// OpenAPI document does: what a client needs a typed error for.
func ProblemTypes() []string {
	out := make([]string, len(problemTypes))
	for i, t := range problemTypes {
		out[i] = problemTypePrefix + t.Kind
	}
	return out
}

// problemTypeOf returns the table's entry for kind; an unknown kind is a
// programming error, answered as internal.
func problemTypeOf(kind string) problemType {
	for _, t := range problemTypes {
		if t.Kind == kind {
			return t
		}
	}
	return problemTypeOf("internal")
}
