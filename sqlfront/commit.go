package sqlfront

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgproto3"
)

// What a client is told of a commit follows the gateway's rule (package
// fence, commitwarning.go): a COMMIT that PostgreSQL answers with a
// WARNING (a cancelled wait for synchronous replication: committed on
// the primary, perhaps on no standby) has an unknown outcome, and so
// does one whose connection was lost before its answer came. Either is
// answered with SQLSTATE 08007 (transaction_resolution_unknown), never
// with the COMMIT's success. The warning comes before the answer it is
// about:
//   - an explicit COMMIT (or END): before its CommandComplete;
//   - an implicit transaction in the extended protocol, which commits at
//     Sync: after its last CommandComplete, before the ReadyForQuery;
//   - an implicit transaction in the simple protocol, which commits
//     before its last statement is answered: before that statement's
//     CommandComplete, which is known to be the last only when the
//     ReadyForQuery comes; so a query's CommandComplete is held until
//     the next answer shows whether it was.
// Any WARNING then counts, as in package fence: unknown is never a lie.

// commitWatch is what the relay has heard since the last command's end.
type commitWatch struct {
	warned      bool // a WARNING since the last CommandComplete
	lastWarning string
	held        *frame // a query's CommandComplete: its last answer yet, perhaps
	heldWarned  bool   // warned before held
}

// hear notes a warning: anything not known to be below one.
func (s *session) hear(m *pgproto3.NoticeResponse) {
	switch m.SeverityUnlocalized {
	case "NOTICE", "INFO", "LOG", "DEBUG":
		return
	}
	s.warned, s.lastWarning = true, m.Message
}

// unknownOutcome is the answer to a commit the front cannot vouch for.
func (s *session) unknownOutcome() *pgproto3.ErrorResponse {
	return refusal(codeUnknown, "fencegw: PostgreSQL warned while committing ("+s.lastWarning+
		"): the transaction may not survive a failover, its outcome is unknown", "").response()
}

// onComplete handles a command's CommandComplete, m decoded from f.
func (s *session) onComplete(h *entry, m *pgproto3.CommandComplete, f frame) error {
	tag := string(m.CommandTag)
	s.trackTag(tag)
	warned := s.warned
	s.warned = false
	if h.call != nil {
		if h.kind == eExecute {
			s.pop()
		}
		return nil
	}
	if h.kind != eExecute && h.kind != eQuery {
		return unexpected(f, h)
	}
	s.relayHeld(h)
	switch {
	case warned && (tag == "COMMIT" || tag == "END"):
		s.relayed(s.unknownOutcome())
		s.muted, h.failed = true, true
		// In the extended protocol the client, told of an error, takes
		// what it sent after up to its Sync as skipped: so it must be
		// (onClient held it back until this answer came).
		s.failed = s.failed || h.kind == eExecute
	case h.kind == eQuery:
		s.held, s.heldWarned = &f, warned
		return nil
	default:
		s.relayFrame(f)
	}
	if h.kind == eExecute {
		s.pop()
	}
	return nil
}

// relayHeld relays a query's held CommandComplete: another answer came,
// so it was not the last.
func (s *session) relayHeld(h *entry) {
	if s.held != nil && h != nil && h.kind == eQuery {
		s.relayFrame(*s.held)
		s.held = nil
	}
}

// onReady handles a ReadyForQuery: the end of a Sync's or a Query's
// answers.
func (s *session) onReady(h *entry, m *pgproto3.ReadyForQuery, f frame) error {
	if h.kind != eSync && h.kind != eQuery {
		return unexpected(f, h)
	}
	implicit := s.tx == 'I' && m.TxStatus == 'I' // a transaction began and ended with the message
	s.tx, s.failed, s.clientFlushes = m.TxStatus, false, false
	if s.tx == 'I' {
		clear(s.fenced)
	}
	if h.call == nil {
		switch {
		case s.held != nil && implicit && s.heldWarned:
			s.relayed(s.unknownOutcome())
			h.failed = true
		case s.held != nil:
			s.relayFrame(*s.held)
		case h.kind == eSync && implicit && s.warned:
			s.relayed(s.unknownOutcome())
		}
		s.muted = false
		if !h.hold {
			s.relayFrame(f)
		}
	}
	s.held, s.warned = nil, false
	s.pop()
	return nil
}

// trackTag follows the transaction's status through the commands of a
// pipeline, before its ReadyForQuery says it: a statement that names
// fences must run in a transaction block.
func (s *session) trackTag(tag string) {
	switch tag {
	case "BEGIN", "START TRANSACTION":
		s.tx = 'T'
	case "COMMIT", "ROLLBACK", "PREPARE TRANSACTION":
		s.tx = 'I'
		clear(s.fenced)
	}
}

// backendLost ends the session after PostgreSQL's connection failed: if
// a message that may have committed was on its way, the outcome is
// unknown (08007); otherwise PostgreSQL rolled the transaction back.
func (s *session) backendLost(err error) error {
	if s.commitPending() {
		s.log.Warn("the connection to PostgreSQL was lost with a commit on its way", "error", err.Error())
		return fatal(codeUnknown, "the connection to PostgreSQL was lost after the transaction's COMMIT was sent: its outcome is unknown")
	}
	s.log.Warn("the connection to PostgreSQL was lost", "error", err.Error())
	return fatal(codeLost, "the connection to PostgreSQL was lost: the transaction in progress, if any, was rolled back")
}

// backendEnded ends the session after PostgreSQL said it ends it (FATAL:
// terminated by an operator, shut down): as a lost connection if a
// commit was on its way, else with PostgreSQL's own words.
func (s *session) backendEnded(m *pgproto3.ErrorResponse) error {
	err := fmt.Errorf("PostgreSQL ended the session: %s (SQLSTATE %s)", m.Message, m.Code)
	if s.commitPending() {
		return s.backendLost(err)
	}
	s.log.Warn("PostgreSQL ended the session", "sqlstate", m.Code, "error", m.Message)
	s.send(m)
	return err
}

// commitPending: a message that may commit is owed an answer.
func (s *session) commitPending() bool {
	for _, e := range s.pending {
		if e.commits && s.tx != 'E' {
			return true
		}
	}
	return false
}

// noteParameter follows what the front reads SQL and tokens by.
func (s *session) noteParameter(m *pgproto3.ParameterStatus) {
	switch m.Name {
	case "standard_conforming_strings":
		s.standard = m.Value != "off"
	case "client_encoding":
		s.utf8 = m.Value == "UTF8"
	}
}
