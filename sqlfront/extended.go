package sqlfront

import (
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
)

// The extended protocol. The front follows the client's prepared
// statements and portals by name: those that name fences (classify.go)
// are its own, answered by the front and never sent on; of the others it
// keeps only whether they commit. A statement of the front's own runs
// as the unnamed statement and portal; the client's unnamed statement,
// if it had one, is parsed again before the client next uses it.

// maxNames bounds the statements and portals a session may have by name.
const maxNames = 100_000

// prepared is a client's prepared statement.
type prepared struct {
	commits bool
	tokens  *verdict // the front's: it names fences
	oids    []uint32 // its parameters' types, as the client gave them
}

// portal is a client's portal.
type portal struct {
	commits bool
	tokens  *verdict
	value   string // the tokens' text, bound
}

type statements struct {
	prepared map[string]*prepared
	portals  map[string]*portal
	// unnamed is the client's last Parse of the unnamed statement;
	// unnamedLost, that the front's own statement has replaced it since.
	unnamed     *frame
	unnamedLost bool
}

func newStatements() statements {
	return statements{prepared: map[string]*prepared{}, portals: map[string]*portal{}}
}

func (s *session) parse(m *pgproto3.Parse, f frame) error {
	v := verdict{}
	sts := splitStatements(m.Query, s.standard)
	for _, st := range sts {
		w := classify(st)
		switch {
		case w.kind == stRefused:
			return s.refuseExtended(w.refusal)
		case w.kind == stTokens && len(sts) > 1:
			return s.refuseExtended(refusal("42601", "cannot insert multiple commands into a prepared statement", ""))
		}
		v.commits = v.commits || w.commits
		if w.kind == stTokens {
			v = w
		}
	}
	if m.Name != "" && s.prepared[m.Name] != nil && (v.kind == stTokens || s.prepared[m.Name].tokens != nil) {
		return s.refuseExtended(refusal("42P05", fmt.Sprintf("prepared statement %q already exists", clipName(m.Name)), ""))
	}
	if len(s.prepared) >= maxNames {
		return s.refuseExtended(refusal(codeTooLarge, fmt.Sprintf("more than %d prepared statements", maxNames), "close or deallocate the ones no longer used"))
	}
	p := &prepared{commits: v.commits, oids: append([]uint32(nil), m.ParameterOIDs...)}
	undo := undoAll(restorer(s.prepared, m.Name), s.unnamedRestorer())
	if v.kind == stTokens {
		p.tokens = &v
		s.prepared[m.Name] = p
		if m.Name == "" {
			s.unnamed, s.unnamedLost = nil, false
		}
		s.answerUndoable(undo, &pgproto3.ParseComplete{})
		return nil
	}
	s.prepared[m.Name] = p
	if m.Name == "" {
		s.unnamed, s.unnamedLost = &f, false
	}
	return s.forward(f, &entry{kind: eParse, undo: undo})
}

func (s *session) bind(m *pgproto3.Bind, f frame) error {
	p := s.prepared[m.PreparedStatement]
	if len(s.portals) >= maxNames {
		return s.refuseExtended(refusal(codeTooLarge, fmt.Sprintf("more than %d portals", maxNames), ""))
	}
	if p != nil && p.tokens != nil {
		value := p.tokens.value
		if n := p.tokens.param; n > 0 {
			if n > len(m.Parameters) || m.Parameters[n-1] == nil {
				return s.refuseExtended(refusal(codeBadTokens, fmt.Sprintf("fencegw.tokens is bound to $%d, which the Bind does not give", n), tokensHint))
			}
			value = string(m.Parameters[n-1]) // text, whichever the format: a text parameter is its bytes
		}
		undo := restorer(s.portals, m.DestinationPortal)
		s.portals[m.DestinationPortal] = &portal{tokens: p.tokens, value: value}
		s.answerUndoable(undo, &pgproto3.BindComplete{})
		return nil
	}
	if err := s.reparseUnnamed(m.PreparedStatement); err != nil {
		return err
	}
	undo := restorer(s.portals, m.DestinationPortal)
	s.portals[m.DestinationPortal] = &portal{commits: p != nil && p.commits}
	return s.forward(f, &entry{kind: eBind, undo: undo})
}

func (s *session) describe(m *pgproto3.Describe, f frame) error {
	if m.ObjectType == 'P' {
		if pt := s.portals[m.Name]; pt != nil && pt.tokens != nil {
			s.answer(rowsOf(pt.tokens))
			return nil
		}
		return s.forward(f, &entry{kind: eDescribePortal})
	}
	if p := s.prepared[m.Name]; p != nil && p.tokens != nil {
		oids := make([]uint32, p.tokens.param)
		for i := range oids {
			oids[i] = pgtype.TextOID
			if i < len(p.oids) && p.oids[i] != 0 {
				oids[i] = p.oids[i]
			}
		}
		s.answer(&pgproto3.ParameterDescription{ParameterOIDs: oids}, rowsOf(p.tokens))
		return nil
	}
	if err := s.reparseUnnamed(m.Name); err != nil {
		return err
	}
	return s.forward(f, &entry{kind: eDescribeStatement})
}

// rowsOf describes what a statement naming fences answers: set_config's
// one text column, or nothing (SET).
func rowsOf(v *verdict) pgproto3.BackendMessage {
	if !v.setConfig {
		return &pgproto3.NoData{}
	}
	return &pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{
		{Name: []byte("set_config"), DataTypeOID: pgtype.TextOID, DataTypeSize: -1, TypeModifier: -1},
	}}
}

func (s *session) execute(m *pgproto3.Execute, f frame) error {
	s.counted++
	pt := s.portals[m.Portal]
	if pt != nil && pt.commits && len(s.fenced) > 0 {
		return s.commit(f)
	}
	if pt == nil || pt.tokens == nil {
		return s.forward(f, &entry{kind: eExecute, commits: pt != nil && pt.commits})
	}
	// The fences are advanced at this point of the transaction: once
	// PostgreSQL has answered everything before, and only if none of it
	// failed (it then skips this message, and so does the front).
	if err := s.drain(); err != nil || s.failed {
		return err
	}
	if s.tx != 'T' {
		return s.refuseExtended(notInBlock(s.tx))
	}
	return s.fenceInLine(pt.value, pt.tokens.setConfig)
}

// commit executes a portal that commits a fenced transaction, once the
// authority confirms no newer holder took its locks (commitcheck.go);
// otherwise the transaction is rolled back and the COMMIT fails, the
// messages up to the Sync skipped, as after an error of PostgreSQL's.
func (s *session) commit(f frame) error {
	if err := s.drain(); err != nil || s.failed {
		return err
	}
	if s.tx == 'T' && len(s.fenced) > 0 {
		if se := s.checkCommit(); se != nil {
			if err := s.rollback(false); err != nil {
				return err
			}
			s.send(se.response())
			s.failed = true
			return nil
		}
	}
	return s.forward(f, &entry{kind: eExecute, commits: true})
}

func (s *session) closeMessage(m *pgproto3.Close, f frame) error {
	var front bool
	var undo func()
	if m.ObjectType == 'P' {
		front = s.portals[m.Name] != nil && s.portals[m.Name].tokens != nil
		undo = restorer(s.portals, m.Name)
		delete(s.portals, m.Name)
	} else {
		front = s.prepared[m.Name] != nil && s.prepared[m.Name].tokens != nil
		undo = restorer(s.prepared, m.Name)
		delete(s.prepared, m.Name)
	}
	if front {
		s.answerUndoable(undo, &pgproto3.CloseComplete{})
		return nil
	}
	return s.forward(f, &entry{kind: eClose, undo: undo})
}

// reparseUnnamed parses the client's unnamed statement again if a
// statement of the front's own replaced it since, before the client uses
// it.
func (s *session) reparseUnnamed(name string) error {
	if name != "" || !s.unnamedLost || s.unnamed == nil {
		return nil
	}
	s.unnamedLost = false
	return s.forward(*s.unnamed, &entry{kind: eParse, quiet: true, undo: func() { s.unnamedLost = true }})
}

// restorer returns what puts m's entry for k back as it is now.
func restorer[V any](m map[string]V, k string) func() {
	old, had := m[k]
	return func() {
		if had {
			m[k] = old
		} else {
			delete(m, k)
		}
	}
}

// unnamedRestorer returns what puts the record of the client's unnamed
// statement back as it is now.
func (s *session) unnamedRestorer() func() {
	unnamed, lost := s.unnamed, s.unnamedLost
	return func() { s.unnamed, s.unnamedLost = unnamed, lost }
}

// undoAll returns what runs each of undos, the last first.
func undoAll(undos ...func()) func() {
	return func() {
		for _, u := range slices.Backward(undos) {
			u()
		}
	}
}

// refuseExtended refuses a message of the extended protocol: PostgreSQL
// is made to fail too (fencegw.refuse), so that it skips what follows up
// to the Sync, as for an error of its own, and the transaction it is in
// fails with it.
func (s *session) refuseExtended(se *sqlError) error {
	if err := s.drain(); err != nil || s.failed {
		return err
	}
	if _, err := s.refuseInBackend(se, false); err != nil {
		return err
	}
	s.send(se.response())
	return nil
}

// notInBlock refuses fencegw.tokens outside a transaction block.
func notInBlock(tx byte) *sqlError {
	if tx == 'E' {
		return refusal(codeAborted, "current transaction is aborted, commands ignored until end of transaction block", "")
	}
	return refusal(codeBadTokens, "SET LOCAL fencegw.tokens names the fences of a transaction block: BEGIN first", tokensHint)
}
