package sqlfront

import (
	"slices"

	"github.com/jackc/pgx/v5/pgproto3"
)

// commitOwed reports whether PostgreSQL owes the answer to an Execute
// that may commit.
func (s *session) commitOwed() bool {
	return slices.ContainsFunc(s.pending, func(e *entry) bool { return e.kind == eExecute && e.commits })
}

// onClient handles one frame of the client's.
func (s *session) onClient(f frame) error {
	if s.failed && f.typ != 'S' && f.typ != 'X' {
		return nil // PostgreSQL skips to the Sync after an error: so does the front
	}
	if f.typ == 'X' {
		return errTerminated
	}
	if s.failed && !s.turn.Held() {
		s.syncUnsent()
		return nil
	}
	if f.typ != 'S' && f.typ != 'H' && s.commitOwed() {
		// What follows a COMMIT before its Sync waits for its answer: a
		// COMMIT PostgreSQL warns at is answered as failed (its outcome
		// unknown), and the client then takes the rest as skipped.
		if err := s.drain(); err != nil || s.failed {
			return err
		}
	}
	if refused, err := s.takeTurn(f); refused || err != nil {
		return err
	}
	msg, err := decodeClient(f)
	if err != nil {
		return err
	}
	switch m := msg.(type) {
	case *pgproto3.Query:
		return s.query(m.String, f)
	case *pgproto3.Parse:
		return s.parse(m, f)
	case *pgproto3.Bind:
		return s.bind(m, f)
	case *pgproto3.Describe:
		return s.describe(m, f)
	case *pgproto3.Execute:
		return s.execute(m, f)
	case *pgproto3.Close:
		return s.closeMessage(m, f)
	case *pgproto3.Sync:
		return s.forward(f, &entry{kind: eSync, commits: s.tx == 'I'})
	case *pgproto3.Flush:
		s.clientFlushes = true
		return s.forward(f, nil)
	case *pgproto3.FunctionCall:
		return s.refuseSimple(refusal(codeUnsupported, "the SQL front does not relay fast-path function calls", "call the function with SELECT"))
	}
	return nil // CopyData, CopyDone, CopyFail: outside COPY, which the front never starts, PostgreSQL ignores them too
}

// query handles a simple query. Its statements go to PostgreSQL as they
// were written, in one Query, unless the front has a statement of it to
// answer (one naming fences) or to check (a COMMIT of a fenced
// transaction: commitcheck.go). Then the front sends the statements one
// by one, in order, answering or checking those in between; one that
// fails ends the query, as PostgreSQL ends a query at its first error.
// A transaction block must hold such a query's statements (BEGIN first,
// or before): pieces cannot be one implicit transaction.
func (s *session) query(text string, f frame) error {
	s.counted++
	sts := splitStatements(text, s.standard)
	verdicts := make([]verdict, len(sts))
	front, commits := false, s.tx == 'I'
	for i, st := range sts {
		v := classify(st)
		switch {
		case v.kind == stRefused:
			return s.refuseSimple(v.refusal)
		case v.kind == stTokens && v.param > 0:
			return s.refuseSimple(refusal(codeBadTokens, "a simple query has no parameters: write the tokens in the statement", tokensHint))
		}
		verdicts[i], commits = v, commits || v.commits
		front = front || v.kind == stTokens || v.commits && len(s.fenced) > 0
	}
	if !front {
		return s.forward(f, &entry{kind: eQuery, commits: commits})
	}
	if err := s.drain(); err != nil {
		return err
	}
	if s.tx == 'I' && !verdicts[0].begins {
		return s.refuseSimple(notInBlock(s.tx))
	}
	for i, st := range sts {
		last, v := i == len(sts)-1, verdicts[i]
		if v.kind == stTokens {
			if done, err := s.setTokens(v, last); done || err != nil {
				return err
			}
			continue
		}
		if v.commits && s.tx == 'T' && len(s.fenced) > 0 {
			if se := s.checkCommit(); se != nil {
				if err := s.rollback(true); err != nil {
					return err
				}
				s.send(se.response())
				s.send(&pgproto3.ReadyForQuery{TxStatus: s.tx})
				return nil
			}
		}
		e := &entry{kind: eQuery, hold: !last, commits: v.commits || s.tx == 'I'}
		if err := s.forward(encoded(&pgproto3.Query{String: text[st.start:st.end]}), e); err != nil || last {
			return err
		}
		if err := s.drain(); err != nil {
			return err
		}
		if e.failed {
			s.send(&pgproto3.ReadyForQuery{TxStatus: s.tx})
			return nil
		}
	}
	return nil
}

// setTokens answers a statement of a simple query that names fences,
// last in it or not; done: the query ended here (an error, answered).
func (s *session) setTokens(v verdict, last bool) (done bool, err error) {
	if s.tx != 'T' {
		s.send(notInBlock(s.tx).response())
		s.send(&pgproto3.ReadyForQuery{TxStatus: s.tx})
		return true, nil
	}
	resp, list, err := s.fenceTokens(v.value)
	if err != nil {
		return true, err
	}
	if resp != nil {
		s.send(resp)
		s.send(&pgproto3.ReadyForQuery{TxStatus: s.tx})
		return true, nil
	}
	if v.setConfig {
		s.send(rowsOf(&v))
		s.send(&pgproto3.DataRow{Values: [][]byte{[]byte(list)}})
		s.send(&pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")})
	} else {
		s.send(&pgproto3.CommandComplete{CommandTag: []byte("SET")})
	}
	if last {
		s.send(&pgproto3.ReadyForQuery{TxStatus: s.tx})
	}
	return last, nil
}

// refuseSimple refuses a simple query (or a fast-path call) before any of
// it runs: in a transaction block, PostgreSQL is made to fail too, so
// that the transaction fails with it, as for an error of PostgreSQL's.
func (s *session) refuseSimple(se *sqlError) error {
	if err := s.drain(); err != nil {
		return err
	}
	if s.tx == 'T' {
		if _, err := s.refuseInBackend(se, true); err != nil {
			return err
		}
	}
	s.send(se.response())
	s.send(&pgproto3.ReadyForQuery{TxStatus: s.tx})
	return nil
}
