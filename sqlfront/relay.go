package sqlfront

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// PostgreSQL answers the messages it is sent in order, each with a known
// shape (ParseComplete, BindComplete, rows and a CommandComplete, …, a
// ReadyForQuery for a Sync or a Query), and after an error in the
// extended protocol it skips everything up to the next Sync. The front
// keeps one entry per message it sent that PostgreSQL owes an answer to,
// oldest first, and reads each answer against the oldest: so it knows
// whose an answer is (the client's, or a statement of the front's own)
// and where the front's own answers go in between (eAnswer entries,
// sent when they reach the head).

type entryKind uint8

const (
	eParse entryKind = iota
	eBind
	eDescribeStatement
	eDescribePortal
	eExecute
	eClose
	eSync
	eQuery
	eAnswer // answers of the front's own, sent to the client in their turn
)

// entry is one message PostgreSQL owes an answer to.
type entry struct {
	kind entryKind
	// call: a statement of the front's own; its answers go there, never
	// to the client.
	call *callResult
	// quiet: a Parse the front sent again (the client's unnamed
	// statement, which a call of the front's replaced); its completion
	// is not the client's to see, an error is.
	quiet bool
	// hold: a piece of a client's query that the front split around the
	// statements it answers itself; its ReadyForQuery is the front's.
	hold    bool
	commits bool // the message may commit a transaction (commit.go)
	failed  bool // eQuery: an error was answered
	answers []pgproto3.BackendMessage
}

// callResult collects the answers to a statement of the front's own.
type callResult struct {
	err  *pgproto3.ErrorResponse
	rows int
}

// relay is what PostgreSQL owes and how its answers are being read.
type relay struct {
	pending []*entry
	// failed: an error in the extended protocol; PostgreSQL skips every
	// message up to the next Sync, and the front does too.
	failed bool
	// muted: the front answered the client itself in the middle of a
	// command's answers (a COMMIT it cannot vouch for); the rest of them,
	// up to the ReadyForQuery, are not relayed.
	muted bool
	tx    byte // the transaction's status, as PostgreSQL last showed it
	commitWatch
}

// push records that PostgreSQL owes e an answer; while an error has it
// skip to the next Sync, it owes nothing but the Sync's.
func (s *session) push(e *entry) {
	if s.failed && e.kind != eSync {
		return
	}
	if len(s.pending) == 0 {
		s.headSince = time.Now()
	}
	s.pending = append(s.pending, e)
	s.answerHead()
}

// answer sends the front's own answers to the client in their turn.
func (s *session) answer(msgs ...pgproto3.BackendMessage) {
	s.push(&entry{kind: eAnswer, answers: msgs})
}

// pop drops the oldest entry, and sends the answers of the front's own
// that are next.
func (s *session) pop() {
	s.pending = s.pending[1:]
	s.headSince = time.Now()
	s.answerHead()
}

func (s *session) answerHead() {
	for len(s.pending) > 0 && s.pending[0].kind == eAnswer {
		for _, m := range s.pending[0].answers {
			s.relayed(m)
		}
		s.pending = s.pending[1:]
	}
}

// relayed sends m to the client unless the rest of a command's answers
// is muted.
func (s *session) relayed(m pgproto3.BackendMessage) {
	if !s.muted {
		s.send(m)
	}
}

// forward sends m on to PostgreSQL, which owes e for it (nil: nothing).
func (s *session) forward(m pgproto3.FrontendMessage, e *entry) error {
	b, err := m.Encode(nil)
	if err != nil {
		return fatal(codeProtocol, "invalid message from the client: "+err.Error())
	}
	if err := s.sendBackend(b); err != nil {
		return err
	}
	if e != nil {
		s.push(e)
	}
	return nil
}

// onBackend handles one event of PostgreSQL's connection.
func (s *session) onBackend(ev backendEvent) error {
	if ev.err != nil {
		return s.backendLost(ev.err)
	}
	s.more = ev.more
	var h *entry
	if len(s.pending) > 0 {
		h = s.pending[0]
	}
	switch m := ev.msg.(type) {
	case *pgproto3.ParameterStatus:
		s.noteParameter(m)
		s.send(m)
		return nil
	case *pgproto3.NotificationResponse:
		s.send(m)
		return nil
	case *pgproto3.NoticeResponse:
		if h != nil && h.call != nil {
			return nil // the front's own statement: what the server says of it is not the client's
		}
		s.hear(m)
		s.relayHeld(h)
		s.relayed(m)
		return nil
	case *pgproto3.ErrorResponse:
		if h == nil || m.SeverityUnlocalized == "FATAL" || m.SeverityUnlocalized == "PANIC" {
			return s.backendEnded(m) // the server is going away
		}
		s.onError(h, m)
		return nil
	}
	if h == nil {
		return fatal(codeProtocol, fmt.Sprintf("PostgreSQL sent %T unasked", ev.msg))
	}
	switch m := ev.msg.(type) {
	case *pgproto3.ReadyForQuery:
		return s.onReady(h, m)
	case *pgproto3.CommandComplete:
		return s.onComplete(h, m)
	case *pgproto3.ParseComplete:
		return s.completes(h, m, eParse)
	case *pgproto3.BindComplete:
		return s.completes(h, m, eBind)
	case *pgproto3.CloseComplete:
		return s.completes(h, m, eClose)
	case *pgproto3.ParameterDescription:
		if h.kind != eDescribeStatement {
			return unexpected(m, h)
		}
		s.relayed(m)
	case *pgproto3.RowDescription, *pgproto3.NoData:
		switch h.kind {
		case eDescribeStatement, eDescribePortal:
			return s.completes(h, m, h.kind)
		case eQuery:
			s.relayHeld(h)
			s.relayed(m)
		default:
			return unexpected(m, h)
		}
	case *pgproto3.DataRow:
		switch {
		case h.call != nil:
			h.call.rows++
		case h.kind == eExecute || h.kind == eQuery:
			s.relayHeld(h)
			s.relayed(m)
		default:
			return unexpected(m, h)
		}
	case *pgproto3.EmptyQueryResponse, *pgproto3.PortalSuspended:
		if h.kind == eQuery {
			s.relayHeld(h)
			s.relayed(m)
			return nil
		}
		return s.completes(h, m, eExecute)
	case *pgproto3.CopyInResponse:
		// COPY is refused before it reaches PostgreSQL; were one to get
		// there, it ends in an error rather than in a hang.
		b, _ := (&pgproto3.CopyFail{Message: "the SQL front does not relay COPY"}).Encode(nil)
		select {
		case s.toBackend <- b:
		default:
			return fatal(codeUnsupported, "the SQL front does not relay COPY")
		}
	default:
		return fatal(codeUnsupported, fmt.Sprintf("the SQL front does not relay %T", m))
	}
	return nil
}

// completes relays m, the last answer h is owed, which must be of kind.
func (s *session) completes(h *entry, m pgproto3.BackendMessage, kind entryKind) error {
	if h.kind != kind {
		return unexpected(m, h)
	}
	if h.call == nil && !h.quiet {
		s.relayed(m)
	}
	s.pop()
	return nil
}

// onError handles an error: relayed (or the front's statement's), and in
// the extended protocol everything up to the next Sync dropped, as
// PostgreSQL skips it.
func (s *session) onError(h *entry, m *pgproto3.ErrorResponse) {
	s.warned = false
	if s.tx == 'T' {
		s.tx = 'E'
	}
	if h.call != nil {
		e := *m
		h.call.err = &e
	} else {
		s.relayHeld(h)
		s.relayed(m)
	}
	if h.kind == eQuery {
		h.failed = true
		return
	}
	s.failed = true
	for len(s.pending) > 0 && s.pending[0].kind != eSync {
		s.pending = s.pending[1:]
	}
	s.headSince = time.Now()
}

func unexpected(m pgproto3.BackendMessage, h *entry) error {
	return fatal(codeProtocol, fmt.Sprintf("PostgreSQL sent %T where the front expected the answer to message kind %d", m, h.kind))
}
