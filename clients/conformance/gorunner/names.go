package main

import (
	"errors"
	"net"

	"github.com/fencegw/fencegw/client"
)

// kinds names the client's sentinels, the most specific first (a retired
// token is a rejected one too; a halted authority is unavailable).
var kinds = []struct {
	name string
	err  error
}{
	{"lease-released", client.ErrReleased},
	{"lease-expired", client.ErrLeaseExpired},
	{"lease-lost", client.ErrLeaseLost},
	{"bad-options", client.ErrBadOptions},
	{"token-retired", client.ErrTokenRetired},
	{"authority-halted", client.ErrAuthorityHalted},
	{"stale-token", client.ErrStaleToken},
	{"token-required", client.ErrTokenRequired},
	{"bad-request", client.ErrBadRequest},
	{"token-rejected", client.ErrTokenRejected},
	{"unknown-operation", client.ErrUnknownOperation},
	{"unauthorized", client.ErrUnauthorized},
	{"forbidden", client.ErrForbidden},
	{"idempotency-mismatch", client.ErrIdempotencyMismatch},
	{"precondition-failed", client.ErrPreconditionFailed},
	{"constraint", client.ErrConstraint},
	{"locked", client.ErrLocked},
	{"too-large", client.ErrTooLarge},
	{"internal", client.ErrInternal},
	{"deadline-passed", client.ErrDeadlinePassed},
	{"no-lock", client.ErrNoLock},
	{"not-found", client.ErrNotFound},
	{"method-not-allowed", client.ErrMethodNotAllowed},
	{"unsupported-media-type", client.ErrUnsupportedMedia},
	{"unsupported-encoding", client.ErrUnsupportedEncoding},
	{"too-many-leases", client.ErrTooManyLeases},
	{"application", client.ErrApplication},
	{"unavailable", client.ErrUnavailable},
	{"unexpected-response", client.ErrUnexpectedResponse},
}

// name is the protocol's name of an outcome: "ok", or the name of the
// client's typed error (README.md, "Names of outcomes").
func name(err error) string {
	if err == nil {
		return "ok"
	}
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	var p *client.ProblemError
	var op *net.OpError
	switch {
	case errors.As(err, &p):
		return "problem"
	case errors.As(err, &op):
		return "unreachable"
	}
	return "other"
}

// answerName is name for the answer of a call that is no lease's: the Go
// client's lease-not-found is ErrLeaseLost, the sentinel of a lease's
// loss, which a lease's own calls report.
func answerName(err error) string {
	if n := name(err); n != "lease-lost" {
		return n
	}
	return "lease-not-found"
}
