package sqlfront

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/tokens"
)

// A transaction of the front stays open between its statements, for as
// long as its client likes, and its lease may end meanwhile: the seed's
// holder frozen by a pause past its TTL, its successor granted the lock.
// The successor cannot write yet (the open transaction holds the fence
// rows it advanced), but the frozen holder must not commit once woken:
// so before a COMMIT of a fenced transaction goes on, the front asks the
// authority who holds each fenced resource now, and rolls the
// transaction back if a newer holder does (FG409, as the fence would
// answer the holder's next write), or, for a resource whose validation
// is "holder", if the token is no longer the live holder's (FG403).
// Safety does not rest on this check (the row locks order the two
// holders' writes: a successor's write waits for this transaction, and
// the fence refuses this holder once the successor has written), only
// the promise that a stale holder's transaction does not commit. So a
// resource of validation "fence" is looked up in the watched view of
// the holders (Config.Holders), which answers only when it has seen
// every change this replica knows of: a successor granted through this
// replica is always in it, one granted through another replica once
// the watch delivers it. Where the view cannot say, and for validation
// "holder", which promises the live holder's token, etcd is read: one
// read per such resource per COMMIT.

// fenced is a fence the transaction in progress advanced.
type fenced struct {
	token  tokens.Token
	holder bool // the resource's validation is "holder"
}

// checkCommit asks the authority about each fence of the transaction
// before its COMMIT; nil if it may commit.
func (s *session) checkCommit() *sqlError {
	for _, r := range slices.Sorted(maps.Keys(s.fenced)) {
		f := s.fenced[r]
		holder, ok, err := s.holderAtCommit(r, f)
		switch {
		case err != nil:
			s.log.Warn("the holder of a fenced resource could not be read at COMMIT", "resource", r, "error", err.Error())
			return refusal(codeUnavailable, "fencegw: the token authority cannot say who holds "+clip.String(r, 80)+
				" now (etcd unavailable): the transaction is rolled back, nothing was written", "retry the transaction")
		case ok && holder.Compare(f.token) > 0:
			s.audit(r, "stale-token", f.token, holder.String())
			se := refusal(codeStale, fmt.Sprintf("fencegw: stale token %s for %s: a newer holder (%s) took the lock while this transaction was open; it is rolled back",
				f.token.Unsigned(), clip.String(r, 80), holder), "your lease ended: take a new one, and read again before writing")
			se.Detail = holder.String()
			return se
		case f.holder && (!ok || holder.Compare(f.token) != 0):
			s.audit(r, "token-rejected", f.token, "")
			return refusal(codeRefused, fmt.Sprintf("fencegw: token %s for %s is no longer the live holder's: the transaction is rolled back",
				f.token.Unsigned(), clip.String(r, 80)), "take a new lease")
		}
	}
	return nil
}

// holderAtCommit is resource's holder for the COMMIT check of fence f:
// from the view of the holders when it knows a holder and f is of
// validation "fence", else from etcd.
func (s *session) holderAtCommit(resource string, f fenced) (tokens.Token, bool, error) {
	if v := s.srv.cfg.Holders; v != nil && !f.holder {
		// Only a holder it names: a view that names none cannot tell a
		// free lock from one whose next holder's key is first in line,
		// its grant not yet recorded (a late grant, a lock-delay), which
		// etcd names.
		if tok, held, known := v.Holder(resource); known && held {
			return tok, true, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), validateTimeout)
	defer cancel()
	return s.srv.cfg.Authority.Holder(ctx, resource)
}

// rollback rolls the session's transaction back, as the front's own
// statement.
func (s *session) rollback(sync bool) error {
	resp, err := s.call(fence.Call{SQL: "ROLLBACK"}, sync)
	if err == nil && resp != nil {
		err = fmt.Errorf("sqlfront: ROLLBACK failed: %s (SQLSTATE %s)", resp.Message, resp.Code)
	}
	return err
}
