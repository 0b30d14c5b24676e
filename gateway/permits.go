package gateway

import (
	"fmt"

	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// permitResources puts the write of each semaphore role of op under the
// permit slot its token names (tokens.PermitResource): a semaphore's
// permits are fenced one slot each, so a paused permit holder is refused
// once its slot has a new holder. keys are the roles' resources as the
// arguments name them; toks their tokens. A permit's token on a lock, a
// lock's token on a semaphore, and a slot the semaphore does not have are
// refused here; that the token is the slot's is the authority's to check
// (its signature binds the permit).
func permitResources(op *policy.Operation, keys []string, toks []tokens.Token) error {
	for i, role := range op.Roles {
		n, p := role.Kind.Permits, toks[i].Permit
		var why string
		switch {
		case n == 0 && p == 0:
			continue
		case n == 0:
			why = fmt.Sprintf("a permit's token (#%d) for %s, which is no semaphore: send the token of a lease on it", p, keys[i])
		case p == 0:
			why = fmt.Sprintf("%s is a semaphore of %d permits: send the token of a permit (E:R#P:SIG) of a lease on it", keys[i], n)
		case p > n:
			why = fmt.Sprintf("permit %d of %s, which has %d permits", p, keys[i], n)
		default:
			keys[i] = tokens.PermitResource(keys[i], p)
			continue
		}
		return &tokens.RejectedError{Presented: toks[i].Unsigned(), Reason: why}
	}
	return nil
}

// checkedResources puts each semaphore role of a check under the permit
// slot its token names, as a write's (permitResources). A check may name
// the slot itself (what a lease answer's resource is): then the token
// must be that slot's permit, and the name is taken as it is, never
// read as a semaphore of its own.
func checkedResources(p *policy.Policy, op *policy.Operation, keys []string, toks []tokens.Token) error {
	for i, role := range op.Roles {
		sem, k, ok := tokens.SplitPermitResource(keys[i])
		if !ok || role.Kind.Permits == 0 || p.KindOf(sem) != role.Kind || k > role.Kind.Permits {
			continue
		}
		if toks[i].Permit != k {
			return &tokens.RejectedError{Presented: toks[i].Unsigned(),
				Reason: fmt.Sprintf("%s is permit %d of %s: send that permit's token (E:R#%d:SIG)", keys[i], k, sem, k)}
		}
		keys[i] = sem
	}
	return permitResources(op, keys, toks)
}

// checkPermits refuses a lease request whose permits are not the
// policy's for its resource (permits, 0 for an exclusive lock): the
// client would otherwise hold something other than it believes.
func checkPermits(req acquireRequest, permits int) error {
	switch {
	case req.Permits == nil || *req.Permits == int64(permits):
		return nil
	case permits == 0:
		return badRequest("lease request: permits %d: %s is an exclusive lock (one holder at a time), not a semaphore: leave permits out", *req.Permits, clip.String(req.Resource, 64))
	}
	return badRequest("lease request: permits %d: %s is a semaphore of %d permits in the policy", *req.Permits, clip.String(req.Resource, 64), permits)
}
