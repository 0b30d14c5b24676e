package sqlfront

import (
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Reading PostgreSQL's answers, each against the oldest entry owed one
// (relay.go): relayed as they came, kept for the front's own statements,
// or, where the front answers for PostgreSQL (commit.go), held back.

// onBackend handles one frame of PostgreSQL's, or the end of its
// connection. It decodes only what the front reads; the rest goes to the
// client as it came.
func (s *session) onBackend(ev backendEvent) error {
	s.backendAhead = ev.ahead
	if ev.err != nil {
		return s.backendLost(ev.err)
	}
	f := ev.f
	var h *entry
	if len(s.pending) > 0 {
		h = s.pending[0]
	}
	switch f.typ {
	case 'S': // ParameterStatus
		var m pgproto3.ParameterStatus
		if err := m.Decode(f.body()); err != nil {
			return fatal(codeProtocol, "invalid ParameterStatus from PostgreSQL")
		}
		s.noteParameter(&m)
		s.out = append(s.out, f.raw...) // the session's state, whoever asked
		return nil
	case 'A': // NotificationResponse
		s.out = append(s.out, f.raw...)
		return nil
	case 'N': // NoticeResponse
		if h != nil && h.call != nil {
			return nil // the front's own statement: what the server says of it is not the client's
		}
		var m pgproto3.NoticeResponse
		if err := m.Decode(f.body()); err != nil {
			return fatal(codeProtocol, "invalid NoticeResponse from PostgreSQL")
		}
		s.hear(&m)
		s.relayHeld(h)
		s.relayFrame(f)
		return nil
	case 'E': // ErrorResponse
		var m pgproto3.ErrorResponse
		if err := m.Decode(f.body()); err != nil {
			return fatal(codeProtocol, "invalid ErrorResponse from PostgreSQL")
		}
		if h == nil || m.SeverityUnlocalized == "FATAL" || m.SeverityUnlocalized == "PANIC" {
			return s.backendEnded(&m) // the server is going away
		}
		s.onError(h, &m, f)
		return nil
	}
	if h == nil {
		return fatal(codeProtocol, fmt.Sprintf("PostgreSQL sent message type %q unasked", f.typ))
	}
	switch f.typ {
	case 'Z': // ReadyForQuery
		var m pgproto3.ReadyForQuery
		if err := m.Decode(f.body()); err != nil {
			return fatal(codeProtocol, "invalid ReadyForQuery from PostgreSQL")
		}
		return s.onReady(h, &m, f)
	case 'C': // CommandComplete
		var m pgproto3.CommandComplete
		if err := m.Decode(f.body()); err != nil {
			return fatal(codeProtocol, "invalid CommandComplete from PostgreSQL")
		}
		return s.onComplete(h, &m, f)
	case '1': // ParseComplete
		return s.completes(h, f, eParse)
	case '2': // BindComplete
		return s.completes(h, f, eBind)
	case '3': // CloseComplete
		return s.completes(h, f, eClose)
	case 't': // ParameterDescription
		if h.kind != eDescribeStatement {
			return unexpected(f, h)
		}
		s.relayOwn(h, f)
	case 'T', 'n': // RowDescription, NoData
		switch h.kind {
		case eDescribeStatement, eDescribePortal:
			return s.completes(h, f, h.kind)
		case eQuery:
			s.relayHeld(h)
			s.relayFrame(f)
		default:
			return unexpected(f, h)
		}
	case 'D': // DataRow
		switch {
		case h.call != nil:
			h.call.rows++
		case h.kind == eExecute || h.kind == eQuery:
			s.relayHeld(h)
			s.relayFrame(f)
		default:
			return unexpected(f, h)
		}
	case 'I', 's': // EmptyQueryResponse, PortalSuspended
		if h.kind == eQuery {
			s.relayHeld(h)
			s.relayFrame(f)
			return nil
		}
		return s.completes(h, f, eExecute)
	case 'G': // CopyInResponse
		// COPY is refused before it reaches PostgreSQL; were one to get
		// there, it ends in an error rather than in a hang.
		s.forwardRaw(encoded(&pgproto3.CopyFail{Message: "the SQL front does not relay COPY"}).raw)
	default:
		return fatal(codeUnsupported, fmt.Sprintf("the SQL front does not relay PostgreSQL's message type %q", f.typ))
	}
	return nil
}

// relayOwn relays f unless h is the front's own statement's.
func (s *session) relayOwn(h *entry, f frame) {
	if h.call == nil {
		s.relayFrame(f)
	}
}

// completes relays f, the last answer h is owed, which must be of kind.
func (s *session) completes(h *entry, f frame, kind entryKind) error {
	if h.kind != kind {
		return unexpected(f, h)
	}
	if h.call == nil && !h.quiet {
		s.relayFrame(f)
	}
	if h.call != nil && kind == eClose {
		h.call.answered() // before the answers that follow it
	}
	s.pop()
	return nil
}

// onError handles an error: relayed (or the front's statement's), and in
// the extended protocol everything up to the next Sync dropped, as
// PostgreSQL skips it.
func (s *session) onError(h *entry, m *pgproto3.ErrorResponse, f frame) {
	s.warned = false
	if s.tx == 'T' {
		s.tx = 'E'
	}
	if h.call != nil {
		h.call.err = scrubbed(m)
		h.call.answered()
	} else {
		s.relayHeld(h)
		s.relayFrame(f)
	}
	if h.kind == eQuery {
		h.failed = true
		return
	}
	s.failed = true
	var skipped []*entry
	for len(s.pending) > 0 && s.pending[0].kind != eSync {
		skipped = append(skipped, s.pending[0])
		s.pending = s.pending[1:]
	}
	// What failed or was skipped did not happen: what the front recorded
	// of it on reading it (a statement closed, a portal bound) is taken
	// back, the latest first, or the front would judge what comes next
	// (is this statement a COMMIT?) on a state PostgreSQL does not have.
	for _, e := range slices.Backward(skipped) {
		if e.undo != nil {
			e.undo()
		}
	}
	s.headSince = time.Now()
}

// scrubbed is the error of one of the front's own statements as the
// client may see it: its code, message, detail and hint, nothing more.
// Its context would quote the statement's parameters, the MAC of its
// fences among them, to a session that set
// log_parameter_max_length_on_error, which any role may.
func scrubbed(m *pgproto3.ErrorResponse) *pgproto3.ErrorResponse {
	return &pgproto3.ErrorResponse{Severity: m.Severity, SeverityUnlocalized: m.SeverityUnlocalized,
		Code: m.Code, Message: m.Message, Detail: m.Detail, Hint: m.Hint}
}

func unexpected(f frame, h *entry) error {
	return fatal(codeProtocol, fmt.Sprintf("PostgreSQL sent message type %q where the front expected the answer to message kind %d", f.typ, h.kind))
}
