package sqlfront

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/fencegw/fencegw/fence"
)

// The front's own statements (package fence's Calls: fencing a
// transaction, refusing in it) run on the session's backend in the
// session's transaction, at the point the client's statement stood. The
// front first waits until PostgreSQL has answered everything before
// (drain), then sends Parse, Bind and Execute of the unnamed statement,
// with the parameters bound (never spelled into SQL), and a Sync in a
// simple query or a Flush in the extended protocol, whose Sync is the
// client's to send. The fence of an Execute goes in line instead
// (callInLine): no Flush and no wait, its answer sent to the client in
// its turn, so that it shares the round trip of the client's Sync.
// Nothing PostgreSQL says of the statement reaches the client, notices
// included: a session may ask for debug messages that would print its
// parameters, and those carry the MAC of its fences.

// drain waits until PostgreSQL has answered every message sent so far,
// relaying the answers. What was sent since the last Sync or Flush (the
// client's messages of a pipeline, a call in line) PostgreSQL keeps until
// asked: drain asks with a Flush, which changes nothing else.
func (s *session) drain() error {
	if len(s.pending) > 0 && s.unasked {
		s.forwardRaw(encoded(&pgproto3.Flush{}).raw)
	}
	for len(s.pending) > 0 {
		if err := s.step(false); err != nil {
			return err
		}
	}
	return nil
}

// call runs c as the front's own statement and returns the error
// PostgreSQL answered it with, nil if none.
func (s *session) call(c fence.Call, sync bool) (*pgproto3.ErrorResponse, error) {
	if err := s.drain(); err != nil {
		return nil, err
	}
	res := &callResult{}
	s.sendCall(c, res)
	if sync {
		s.forwardRaw(encoded(&pgproto3.Sync{}).raw)
		s.push(&entry{kind: eSync, call: res})
	} else {
		s.forwardRaw(encoded(&pgproto3.Flush{}).raw)
	}
	if err := s.drain(); err != nil {
		return nil, err
	}
	return res.err, nil
}

// callInLine sends c as call does in the extended protocol, but neither
// asks PostgreSQL to answer at once nor waits: the client's messages that
// follow go after it, their Sync (or Flush) among them, so that a
// driver's Bind to Sync costs one round trip to PostgreSQL, the call's
// included. then is told the call's error (nil if none) once PostgreSQL
// has answered all of it, or failed it, before any answer that follows.
func (s *session) callInLine(c fence.Call, then func(*pgproto3.ErrorResponse)) {
	s.sendCall(c, &callResult{then: then})
}

// sendCall queues c's Parse, Bind, Execute and Close for PostgreSQL, its
// answers owed to res. The portal, bound with the parameters, is closed
// at once: the client must not execute it again.
func (s *session) sendCall(c fence.Call, res *callResult) {
	msgs := []pgproto3.FrontendMessage{
		&pgproto3.Parse{Query: c.SQL, ParameterOIDs: c.ParamOIDs},
		&pgproto3.Bind{Parameters: c.Params},
		&pgproto3.Execute{},
		&pgproto3.Close{ObjectType: 'P'},
	}
	for _, m := range msgs {
		s.forwardRaw(encoded(m).raw)
	}
	s.unnamedLost = true
	for _, kind := range []entryKind{eParse, eBind, eExecute, eClose} {
		s.push(&entry{kind: kind, call: res})
	}
}

// refuseInBackend makes PostgreSQL fail the session's transaction with
// se, as fencegw.refuse raises it.
func (s *session) refuseInBackend(se *sqlError, sync bool) (*pgproto3.ErrorResponse, error) {
	return s.call(fence.RefuseCall(se.Code, se.Message, se.Detail), sync)
}

// cancelHead asks PostgreSQL to cancel what it works on for the oldest
// message owed: it has taken longer than the statement timeout.
func (s *session) cancelHead() {
	if len(s.pending) == 0 {
		return
	}
	s.headCancels = s.pending[0]
	s.log.Info("statement timeout: cancelling", "after", s.srv.cfg.StatementTimeout.String())
	go s.cancelBackend()
}

// cancelBackend sends PostgreSQL a cancel request for the session's
// backend. It may run on any goroutine.
func (s *session) cancelBackend() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.be.cancel(ctx); err != nil {
		s.log.Warn("a cancel request could not be sent to PostgreSQL", "error", err.Error())
	}
}

// cancel handles a client's CancelRequest: the session whose key it
// names, and only that one, has its wait for a turn or its backend's
// work cancelled. A key that names none is ignored, as PostgreSQL
// ignores it.
func (s *Server) cancel(req pgproto3.CancelRequest) {
	if len(req.SecretKey) != 4 {
		return
	}
	k := cancelKey{pid: req.ProcessID, secret: uint32(req.SecretKey[0])<<24 | uint32(req.SecretKey[1])<<16 | uint32(req.SecretKey[2])<<8 | uint32(req.SecretKey[3])}
	s.mu.Lock()
	sess := s.byKey[k]
	s.mu.Unlock()
	if sess != nil && !sess.cancelWait(errCancelRequest) {
		sess.cancelBackend()
	}
}
