package sqlfront

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// Fencing a transaction. The text of fencegw.tokens is read; each of its
// resources must be one the client may fence from the front (its
// sql_resources); each token is validated exactly as the HTTP path
// validates it (the authority's Validate, under the resource's
// validation: signature and client binding, epoch, no future revision,
// the live holder if asked); then the fences advance at this point of
// the transaction, in canonical order, with fencegw.fence_session, which
// only the front can call for this backend. A refusal before PostgreSQL
// (a malformed list, a resource not the client's, a token the authority
// refuses or cannot judge) is raised in the transaction by
// fencegw.refuse, so that it fails as for any error; a stale token is
// fencegw.fence's FG409. Refusals of tokens go to the audit, as the HTTP
// path's do.

// validateTimeout bounds the authority's judgement of one token; package
// authority bounds each of its etcd reads more tightly.
const validateTimeout = 10 * time.Second

// fenceTokens fences the session's transaction on text's tokens, for a
// simple query. It returns the error to answer the statement with (nil:
// fenced), and the tokens as the client may see them back.
func (s *session) fenceTokens(text string) (*pgproto3.ErrorResponse, string, error) {
	fences, holderMode, named, se := s.checkTokens(text)
	if se != nil {
		if _, err := s.refuseInBackend(se, true); err != nil {
			return nil, "", err
		}
		return se.response(), "", nil
	}
	resp, err := s.call(s.fs.FenceCall(fences), true)
	if err != nil {
		return nil, "", err
	}
	if resp != nil && resp.Code == codeStale {
		return s.stale(resp, fences), "", nil
	}
	if resp == nil {
		for _, f := range fences {
			s.fenced[f.Resource] = fenced{token: f.Token, holder: holderMode[f.Resource]}
		}
	}
	return resp, unsignedList(named), nil
}

// fenceInLine fences as fenceTokens does, for an Execute of the extended
// protocol, without waiting for PostgreSQL (callInLine): the fence goes
// before the client's messages that follow, and its answer (set_config's
// row, SET's completion, or the refusal of a stale token) is sent in its
// turn. A refusal before PostgreSQL is refuseExtended's. The fences count as advanced at once: a COMMIT later in the same
// pipeline is checked (commitcheck.go), and if the fence fails, so does
// the transaction.
func (s *session) fenceInLine(text string, setConfig bool) error {
	fences, holderMode, named, se := s.checkTokens(text)
	if se != nil {
		return s.refuseExtended(se)
	}
	for _, f := range fences {
		s.fenced[f.Resource] = fenced{token: f.Token, holder: holderMode[f.Resource]}
	}
	list := unsignedList(named)
	s.callInLine(s.fs.FenceCall(fences), func(resp *pgproto3.ErrorResponse) {
		switch {
		case resp != nil && resp.Code == codeStale:
			s.send(s.stale(resp, fences))
		case resp != nil:
			s.send(resp)
		case setConfig:
			s.send(&pgproto3.DataRow{Values: [][]byte{[]byte(list)}})
			s.send(&pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")})
		default:
			s.send(&pgproto3.CommandComplete{CommandTag: []byte("SET")})
		}
	})
	return nil
}

// checkTokens reads and validates text's tokens, and returns the fences
// to advance, sorted by resource, and which resources' validation is
// "holder".
func (s *session) checkTokens(text string) ([]fence.FrontFence, map[string]bool, []namedToken, *sqlError) {
	if !s.utf8 {
		return nil, nil, nil, refusal(codeBadTokens, "fencegw.tokens is read as UTF-8: set client_encoding to UTF8", "")
	}
	named, se := parseTokenList(text)
	if se != nil {
		return nil, nil, nil, se
	}
	holderMode := map[string]bool{}
	pol, client := s.srv.cfg.Policy, s.client.Name
	fences := make([]fence.FrontFence, 0, len(named))
	for _, n := range named {
		kind, err := pol.SQLResource(s.client, n.resource)
		if err != nil {
			return nil, nil, nil, refusal(codeRefused, "fencegw: "+strings.TrimPrefix(err.Error(), "policy: "), "")
		}
		if n.token.Permit != 0 {
			return nil, nil, nil, refusal(codeRefused, fmt.Sprintf("fencegw: a permit's token for %s: the SQL front fences exclusive locks only", clip.String(n.resource, 80)), "")
		}
		ctx, cancel := context.WithTimeout(context.Background(), validateTimeout)
		err = s.srv.cfg.Authority.Validate(ctx, n.resource, client, n.token, kind.Validation)
		cancel()
		if err != nil {
			return nil, nil, nil, s.refusedToken(n, err)
		}
		holderMode[n.resource] = kind.Validation == tokens.ValidateHolder
		fences = append(fences, fence.FrontFence{Resource: n.resource, Token: n.token, Strict: kind.Compare == policy.Strict})
	}
	slices.SortFunc(fences, func(a, b fence.FrontFence) int { return strings.Compare(a.Resource, b.Resource) })
	return fences, holderMode, named, nil
}

// refusedToken answers a token the authority did not vouch for: FG403
// if it refused it (audited), a class PostgreSQL drivers retry if it
// could not be asked: nothing was written.
func (s *session) refusedToken(n namedToken, err error) *sqlError {
	var rejected *tokens.RejectedError
	if errors.As(err, &rejected) {
		s.audit(n.resource, "token-rejected", n.token, "")
		return refusal(codeRefused, fmt.Sprintf("fencegw: token %s for %s refused: %s", n.token.Unsigned(), clip.String(n.resource, 80), rejected.Reason),
			"take a new lease, and use the token it grants as granted")
	}
	s.log.Warn("a token could not be validated", "resource", n.resource, "error", err.Error())
	return refusal(codeUnavailable, "fencegw: the token authority cannot vouch for tokens now (etcd unavailable or the authority halted): nothing was written",
		"retry the transaction")
}

// stale answers a fence that refused a token: PostgreSQL's FG409, its
// message naming the fence. It is audited.
func (s *session) stale(resp *pgproto3.ErrorResponse, fences []fence.FrontFence) *pgproto3.ErrorResponse {
	current := resp.Detail
	for _, f := range fences {
		if strings.Contains(resp.Message, " for "+f.Resource) {
			s.audit(f.Resource, "stale-token", f.Token, current)
			out := refusal(codeStale, fmt.Sprintf("fencegw: stale token %s for %s: the fence is at %s, a newer holder's; the transaction is rolled back",
				f.Token.Unsigned(), f.Resource, current), "your lease ended: take a new one, and read again before writing")
			out.Detail = current
			return out.response()
		}
	}
	return resp
}

// audit records a refusal of the front's in fencegw.rejections, as the
// HTTP path records its own: who, which connection, which statement.
func (s *session) audit(resource, reason string, presented tokens.Token, current string) {
	r := fence.Rejection{
		Resource: resource, Operation: "sql", Reason: reason, Presented: presented.Unsigned().String(), Current: current,
		Client: s.client.Name, RequestID: fmt.Sprintf("sql-%d-%d", s.id, s.counted), RemoteAddr: s.remote,
	}
	s.log.Info("write refused", "resource", resource, "reason", reason, "presented", r.Presented, "current", current, "request_id", r.RequestID)
	if s.srv.cfg.Audit != nil {
		s.srv.cfg.Audit(r)
	}
}
