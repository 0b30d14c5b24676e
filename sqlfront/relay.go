package sqlfront

import (
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
	// undo takes back what the front recorded of the message (a
	// statement or portal made or closed) if PostgreSQL skips it, or
	// fails it: an error before it in its pipeline (onError).
	undo func()
}

// callResult collects the answers to a statement of the front's own.
type callResult struct {
	err  *pgproto3.ErrorResponse
	rows int
	// then, if set, is told err once the statement is answered (its
	// CloseComplete) or failed (callInLine).
	then func(*pgproto3.ErrorResponse)
}

// answered tells then, once, that the statement is done.
func (r *callResult) answered() {
	if then := r.then; then != nil {
		r.then = nil
		then(r.err)
	}
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

// answerUndoable is answer, for a message whose record undo takes back
// if an error before it in its pipeline has PostgreSQL skip it.
func (s *session) answerUndoable(undo func(), msgs ...pgproto3.BackendMessage) {
	s.push(&entry{kind: eAnswer, answers: msgs, undo: undo})
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

// forward sends f on to PostgreSQL, which owes e for it (nil: nothing).
func (s *session) forward(f frame, e *entry) error {
	s.forwardRaw(f.raw)
	if e != nil {
		s.push(e)
	}
	return nil
}
