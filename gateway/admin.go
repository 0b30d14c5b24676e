package gateway

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// The operator's verbs, over POST /v1/admin/…: revoke a lease, advance a
// resource's fence. Each is for an operator's client (operations ["*"] in
// the policy; anyone when the policy declares no clients), takes a reason,
// is recorded in the lock history with who asked and why, and with
// dry_run shows what it would do and changes nothing.

// leaseInfoJSON is a lease as an operator sees it: no signed token.
type leaseInfoJSON struct {
	LeaseID  string `json:"lease_id"`
	Resource string `json:"resource"`
	Token    string `json:"token,omitempty"` // absent: a contender in a semaphore's line, no slot yet
	Client   string `json:"client,omitempty"`
	Waiting  bool   `json:"waiting,omitempty"`
}

type revokeResponse struct {
	Lease   leaseInfoJSON `json:"lease"`
	Revoked bool          `json:"revoked"`
	DryRun  bool          `json:"dry_run"`
	// Fence is the revoked holder's fence, moved past its token; absent
	// with keep_fence, or for a lease that held nothing.
	Fence *fenceCutJSON `json:"fence,omitempty"`
}

// fenceCutJSON is a fence before and after it cut a token off (with
// dry_run: would be after); advanced is false when it was past already.
type fenceCutJSON struct {
	Before   *string `json:"before"` // null: no fence yet (never written)
	Fence    string  `json:"fence"`
	Advanced bool    `json:"advanced"`
}

type advanceResponse struct {
	Resource string `json:"resource"`
	// Before is the fence found (null: none, never written); Fence the
	// one it has now (with dry_run: would have).
	Before   *string `json:"before"`
	Fence    string  `json:"fence"`
	Advanced bool    `json:"advanced"`
	// Holder is the token cut off (none when nobody holds the lock);
	// Waiting the leases in line, which all write once granted.
	Holder  string `json:"holder,omitempty"`
	Waiting int64  `json:"waiting"`
	DryRun  bool   `json:"dry_run"`
}

// requireOperator refuses a client that is not an operator's.
func requireOperator(r *http.Request, verb string) error {
	if c := clientOf(r.Context()); c != nil && !c.MayCallEvery() {
		return fmt.Errorf("%w: client %s may not %s: it needs operations [\"*\"]", ErrForbidden, c.Name, verb)
	}
	return nil
}

// operatorName names the operator in the history.
func operatorName(ctx context.Context) string { return cmp.Or(clientName(ctx), anonymous) }

func (g *Gateway) decodeAdmin(w http.ResponseWriter, r *http.Request, verb string, allowed ...string) (adminRequest, error) {
	if err := requireOperator(r, verb); err != nil {
		return adminRequest{}, err
	}
	if err := requireJSON(r); err != nil {
		return adminRequest{}, err
	}
	body, err := g.readBodyWithin(w, r)
	if err != nil {
		return adminRequest{}, err
	}
	return decodeAdminRequest(body, allowed...)
}

// handleRevoke serves POST /v1/admin/leases/revoke {resource | lease_id,
// reason, dry_run, keep_fence}: the lease that holds resource's lock, or
// the lease named, is revoked, whoever owns it; its lock passes on (after
// its lock-delay, as after an expiry: its holder did not say it was
// done). Unless keep_fence, the holder is cut off as well: its fence moves
// past its token first, so that its next write is refused, not only once
// a successor has written. First, because a revoke answered unavailable
// is then safe to send again: the advance is idempotent, and no successor
// was revoked in the holder's place.
func (g *Gateway) handleRevoke(w http.ResponseWriter, r *http.Request) {
	req, err := g.decodeAdmin(w, r, "revoke leases", "resource", "lease_id", "reason", "dry_run", "keep_fence")
	if err != nil {
		g.writeProblem(w, r, err, problemScope{})
		return
	}
	var info authority.LeaseInfo
	switch {
	case (req.Resource == "") == (req.LeaseID == ""):
		err = badRequest("give resource or lease_id, one of them")
	case req.LeaseID != "":
		var id authority.LeaseID
		if id, err = authority.ParseLeaseID(req.LeaseID); err == nil {
			info, err = g.cfg.Authority.LeaseInfo(r.Context(), id)
		}
	default:
		if err = g.notASemaphore(req.Resource); err == nil {
			info, err = g.cfg.Authority.HolderLease(r.Context(), req.Resource)
		}
	}
	var cut *fenceCutJSON
	if err == nil && !req.KeepFence && !info.Waiting && !info.Token.IsZero() {
		cut, err = g.cutOff(r.Context(), info, req.Reason, req.DryRun)
	}
	if err == nil && !req.DryRun {
		err = g.cfg.Authority.Revoke(r.Context(), info.ID, operatorName(r.Context()), req.Reason)
	}
	if err != nil {
		g.writeProblem(w, r, err, problemScope{Resource: req.Resource})
		return
	}
	var token string
	if !info.Token.IsZero() {
		token = g.cfg.Policy.ShownToken(info.Resource, info.Token).String()
	}
	out := revokeResponse{Lease: leaseInfoJSON{LeaseID: info.ID.String(), Resource: info.Resource, Token: token,
		Client: info.Owner, Waiting: info.Waiting}, Revoked: !req.DryRun, DryRun: req.DryRun, Fence: cut}
	if out.Revoked {
		g.metrics.leases.WithLabelValues("revoked").Inc()
		g.log.Info("lease revoked by an operator", "lease", info.ID.String(), "resource", info.Resource,
			"operator", operatorName(r.Context()), "reason", req.Reason)
		// The watch of lease ends records it too, with the same words;
		// the table keeps one.
		g.cfg.Node.AddHistory(fence.HistoryEvent{At: time.Now(), Resource: info.Resource, Event: fence.Revoked, LeaseID: info.ID.String(),
			Client: info.Owner, Token: token, Actor: operatorName(r.Context()), Reason: req.Reason})
	}
	writeJSON(w, http.StatusOK, out)
}

// cutOff moves the fence of the lease info holds past its token, as a
// fence advance would with the holder's successor as the first to keep:
// every later token, the next holder's included, still writes. It is
// recorded in the lock history like an advance.
func (g *Gateway) cutOff(ctx context.Context, info authority.LeaseInfo, reason string, dryRun bool) (*fenceCutJSON, error) {
	next := tokens.Token{Epoch: info.Token.Epoch, Revision: info.Token.Revision + 1}
	to := fenceBelow(next, g.cfg.Policy.KindOf(info.Resource))
	before, advanced, err := g.store.AdvanceFence(ctx, info.Resource, to, dryRun)
	if err != nil {
		return nil, err
	}
	shown := func(t tokens.Token) string { return g.cfg.Policy.ShownToken(info.Resource, t).String() }
	cut := &fenceCutJSON{Before: fenceShown(before, shown), Fence: shown(before), Advanced: advanced}
	if advanced {
		cut.Fence = shown(to)
	}
	if advanced && !dryRun {
		g.cfg.Node.AddHistory(fence.HistoryEvent{At: time.Now(), Resource: info.Resource, Event: fence.FenceAdvanced,
			Token: cut.Fence, Actor: operatorName(ctx), Reason: "revoke of lease " + info.ID.String() + ": " + reason})
	}
	return cut, nil
}

// handleAdvance serves POST /v1/admin/fences/advance {resource, reason,
// dry_run}: resource's fence moves past every token issued so far, so
// every current holder is refused at its next write, while the leases in
// line, and every later grant, write as usual (docs/concepts.md, "Fence
// advance").
func (g *Gateway) handleAdvance(w http.ResponseWriter, r *http.Request) {
	req, err := g.decodeAdmin(w, r, "advance fences", "resource", "reason", "dry_run")
	if err == nil && req.Resource == "" {
		err = badRequest("resource is required")
	}
	if err == nil {
		err = tokens.CheckResource(req.Resource)
	}
	if err == nil {
		err = g.notASemaphore(req.Resource)
	}
	if err != nil {
		g.writeProblem(w, r, err, problemScope{})
		return
	}
	scope := problemScope{Resource: req.Resource}
	keep, st, err := g.cfg.Authority.FirstToKeep(r.Context(), req.Resource)
	if err != nil {
		g.writeProblem(w, r, err, scope)
		return
	}
	to := fenceBelow(keep, g.cfg.Policy.KindOf(req.Resource))
	before, advanced, err := g.store.AdvanceFence(r.Context(), req.Resource, to, req.DryRun)
	if err != nil {
		g.writeProblem(w, r, err, scope)
		return
	}
	shown := func(t tokens.Token) string { return g.cfg.Policy.ShownToken(req.Resource, t).String() }
	out := advanceResponse{Resource: req.Resource, Before: fenceShown(before, shown), Fence: shown(before), Advanced: advanced,
		Waiting: st.Waiting, DryRun: req.DryRun}
	if advanced {
		out.Fence = shown(to)
	}
	if st.Holder != nil {
		out.Holder = shown(st.Holder.Token)
	}
	if advanced && !req.DryRun {
		g.log.Info("fence advanced by an operator", "resource", req.Resource, "from", out.Before, "to", out.Fence,
			"operator", operatorName(r.Context()), "reason", req.Reason)
		g.cfg.Node.AddHistory(fence.HistoryEvent{At: time.Now(), Resource: req.Resource, Event: fence.FenceAdvanced,
			Token: out.Fence, Actor: operatorName(r.Context()), Reason: req.Reason})
	}
	writeJSON(w, http.StatusOK, out)
}

// notASemaphore refuses an operator's verb on a semaphore's own name: its
// holders hold its permit slots, each a lock with a fence, and no lease
// or write is the name's own.
func (g *Gateway) notASemaphore(resource string) error {
	if _, _, slot := tokens.SplitPermitResource(resource); slot {
		return nil
	}
	if k := g.cfg.Policy.KindOf(resource); k != nil && k.Permits > 0 {
		return badRequest("%s is a semaphore of %d permits: its holders hold its slots %s to %s, each a lock with a fence of its own; name one",
			resource, k.Permits, tokens.PermitResource(resource, 1), tokens.PermitResource(resource, k.Permits))
	}
	return nil
}

// fenceBelow is the fence that refuses every token below keep and accepts
// keep: keep itself where a token equal to the fence writes (monotonic),
// the revision before it where only a greater one does (strict).
func fenceBelow(keep tokens.Token, res *policy.ResourceKind) tokens.Token {
	if res != nil && res.Compare == policy.Strict {
		keep.Revision--
	}
	return keep
}

// fenceShown is a fence found as an answer shows it: null for none (a
// revision 0, a resource never written under a floor never raised),
// which no token's spelling can say.
func fenceShown(t tokens.Token, shown func(tokens.Token) string) *string {
	if t.Revision == 0 {
		return nil
	}
	s := shown(t)
	return &s
}
