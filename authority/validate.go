package authority

// The signed-token check: Validate is the authority's word on a token
// presented with a write, and CheckSignature its first part, which the
// gateway asks before a write takes a turn at its admission gate. A
// token's signature binds its epoch, revision, resource and client
// (package tokens); checkSigned judges it against the loaded keys, then
// against etcd's for a key rotated in since. A token from the future is
// future.go's.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// ValidateTimeout bounds the etcd reads of one Validate.
const ValidateTimeout = 3 * time.Second

// Validate checks the authority's word on tok, presented by client for a
// write of resource:
//   - ValidateFence: the gateway issued tok for this resource and client
//     (its signature), its epoch is current and its revision not above the
//     newest etcd has issued. No etcd call, unless the signature is by a key
//     this process has not loaded yet, or the token is above the newest
//     revision this process has seen (checkIssued).
//   - ValidateHolder: that, and tok is the live holder of resource's lock
//     now (a linearizable etcd read per write).
//   - ValidateRevision: tok is a number, not a capability: its epoch is
//     current and its revision not above the newest etcd has issued; a
//     signature is ignored.
//
// Whatever the mode, a token from the future (a revision or an epoch above
// etcd's) is refused as never issued: signed with a leaked key, it would
// otherwise lock every real holder out until an epoch bump ("token
// poisoning"). The signature is judged first, so an unsigned forgery costs
// no etcd read.
//
// The reads it needs are bounded by ctx and by ValidateTimeout, so that a
// write fails fast with etcd gone instead of waiting out its own deadline.
//
// Validation is the authority's word only, and already old when the write
// commits: a holder can lose its lease right after this check. The fence
// comparison in PostgreSQL is what keeps a stale holder out.
func (a *Etcd) Validate(ctx context.Context, resource, client string, tok tokens.Token, mode tokens.Validation) error {
	if mode == tokens.ValidateRevision {
		return a.checkIssued(ctx, tok)
	}
	if set := a.keys.Load(); mode != tokens.ValidateHolder && set != nil && set.ring.Verify(tok, resource, client) {
		return a.checkIssued(ctx, tok) // the common case: no etcd, no deadline to set up
	}
	ctx, cancel := context.WithTimeout(ctx, ValidateTimeout)
	defer cancel()
	if err := a.checkSigned(ctx, resource, client, tok); err != nil {
		return err
	}
	if err := a.checkIssued(ctx, tok); err != nil || mode != tokens.ValidateHolder {
		return err
	}
	holder, ok, err := a.Holder(ctx, resource)
	switch {
	case err != nil:
		return err
	case !ok:
		return &tokens.RejectedError{Presented: tok.Unsigned(), Issued: true, Reason: "no live holder of " + resource + ": the lease expired or was released"}
	case holder.Compare(tok) != 0:
		return &tokens.RejectedError{Presented: tok.Unsigned(), Issued: true, Reason: fmt.Sprintf("not the live holder of %s (the holder is %s)", resource, holder)}
	}
	return nil
}

// CheckSignature decides what Validate decides first: whether tok is
// signed by this authority for resource and client, by a key not retired
// (nothing is signed under validation: revision). It reads etcd only for
// a signature no loaded key verifies (a key rotated in since the last
// load), never whether the token was issued or its holder: the gateway
// asks it before a call takes its turn at the admission gate, so that a
// forgery never holds one.
func (a *Etcd) CheckSignature(ctx context.Context, resource, client string, tok tokens.Token, mode tokens.Validation) error {
	if mode == tokens.ValidateRevision {
		return nil
	}
	if set := a.keys.Load(); set != nil && set.ring.Verify(tok, resource, client) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ValidateTimeout)
	defer cancel()
	return a.checkSigned(ctx, resource, client, tok)
}

// checkSigned refuses a token the gateway did not issue for resource and
// client (unsigned, or signed for another resource or client), and one
// signed by a retired key. A signature no loaded key verifies may be by a
// key rotated in since this process loaded its keys: only etcd can say
// (keysReadSince), so if the keys cannot be read again the answer is that
// the authority is unavailable, never a refusal a retry would contradict.
func (a *Etcd) checkSigned(ctx context.Context, resource, client string, tok tokens.Token) error {
	presented := time.Now()
	set, err := a.keySet(ctx)
	if err != nil {
		return err
	}
	if set.ring.Verify(tok, resource, client) {
		return nil
	}
	if tok.Signed() && !set.retiredSigned(tok, resource, client) {
		// A retired key is never brought back: that answer needs no etcd.
		if set, err = a.keysReadSince(ctx, presented); err != nil {
			return err
		}
		if set.ring.Verify(tok, resource, client) {
			return nil
		}
		if ids := set.unopened(); len(ids) > 0 {
			// One of the keys this replica cannot open may have signed it:
			// a refusal another replica would contradict is no answer.
			return unavailable("verify a token's signature", fmt.Errorf("%w: key %s, which may have signed it, does not open here (fencegw keys list names its KEK)", ErrKeysSealed, strings.Join(ids, ", ")))
		}
	}
	switch {
	case !tok.Signed():
		return &tokens.RejectedError{Presented: tok.Unsigned(), Reason: "unsigned: send the token your lease was granted with (E:R:SIGNATURE)"}
	case set.retiredSigned(tok, resource, client):
		return &tokens.RejectedError{Presented: tok.Unsigned(), Issued: true, Retired: true,
			Reason: "signed by a retired key (fencegw keys retire): take a new lease"}
	}
	why := "not issued by this authority for " + resource
	if client != "" {
		why += " to client " + client
	}
	return &tokens.RejectedError{Presented: tok.Unsigned(), Reason: why}
}
