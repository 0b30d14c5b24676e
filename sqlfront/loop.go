package sqlfront

import "time"

// The loop: one event at a time, frames already read first, writes only
// when it would otherwise wait (session.go).

// loop handles events until the session ends, and returns why: never
// nil, for a session ends only by an error, the client's goodbye
// (errTerminated) and its going away included.
func (s *session) loop() error {
	for {
		if err := s.step(true); err != nil {
			return err
		}
	}
}

// aheadBound is how much the loop queues for a peer while frames
// already read keep coming (step), before it writes.
const aheadBound = 64 << 10

// step handles the next event: a frame of PostgreSQL's, one of the
// client's (only if client: a drain waits for PostgreSQL alone), a
// timeout, the front's shutdown. Frames already read are handled first;
// only when there are none does it write what it owes, and wait.
func (s *session) step(client bool) error {
	if s.stopping && len(s.pending) == 0 {
		return fatal(codeShutdown, "terminating connection: the SQL front is shutting down, and the transaction in progress is rolled back")
	}
	var fromClient <-chan clientEvent
	if client && !s.stopping {
		fromClient = s.fromClient
	}
	shutdown := s.stop
	if s.stopping {
		shutdown = nil
	}
	select {
	case ev := <-s.fromBackend:
		return s.onBackend(ev)
	case ev := <-fromClient:
		return s.clientEvent(ev)
	default:
	}
	// A frame whole in a reader's buffer comes without a wait: handle it
	// before writing, so that what a peer sent in one write (a driver's
	// Bind to Sync, PostgreSQL's answers to them) goes on in one write,
	// not in two because the reader had not handed the rest over yet. Up
	// to a bound: a long result still streams.
	if s.backendAhead && len(s.out) < aheadBound {
		return s.onBackend(<-s.fromBackend)
	}
	if fromClient != nil && s.clientAhead && len(s.toPG) < aheadBound {
		return s.clientEvent(<-fromClient)
	}
	// The client is written to as PostgreSQL writes to it: at the end of
	// what a Sync or a Query is owed (its ReadyForQuery), when the client
	// sent a Flush, or when much is queued; and whenever nothing more is
	// owed. Never half-way through the answers to one Sync, which no
	// driver waits for.
	if s.outReady || len(s.pending) == 0 || s.clientFlushes || len(s.out) >= aheadBound {
		if err := s.flush(); err != nil {
			return err
		}
	}
	if err := s.flushBackend(); err != nil {
		return err
	}
	if client {
		s.releaseTurn()
	}
	idle, stmt, stop := s.timers(client)
	defer stop()
	select {
	case ev := <-s.fromBackend:
		return s.onBackend(ev)
	case ev := <-fromClient:
		return s.clientEvent(ev)
	case <-idle:
		if s.tx != 'I' {
			return fatal(codeIdleInTx, "terminating connection due to idle-in-transaction timeout: its transaction is rolled back")
		}
		return fatal(codeIdle, "terminating connection due to idle-session timeout")
	case <-stmt:
		s.cancelHead()
		return nil
	case <-shutdown:
		// What PostgreSQL owes answers for is answered first: a COMMIT
		// on its way is told as it ends, not cut off unknown.
		s.stopping = true
		if len(s.pending) > 0 {
			s.log.Info("the SQL front is shutting down: the session ends once PostgreSQL has answered what is on its way")
		}
		return nil
	}
}

// clientEvent handles a frame of the client's.
func (s *session) clientEvent(ev clientEvent) error {
	s.clientAhead = ev.ahead
	if ev.err != nil {
		return s.clientGone(ev.err)
	}
	return s.onClient(ev.f)
}

// timers are the idle timeouts (in a transaction or not), running while
// nothing is owed to the
// client and the loop waits for it, and the statement timeout of the
// oldest thing owed; nil channels where they do not apply.
func (s *session) timers(client bool) (idle, stmt <-chan time.Time, stop func()) {
	var timers []*time.Timer
	d := s.srv.cfg.IdleTimeout
	if s.tx != 'I' {
		d = s.srv.cfg.IdleInTransactionTimeout
	}
	if d > 0 && client && len(s.pending) == 0 {
		t := time.NewTimer(d)
		idle, timers = t.C, append(timers, t)
	}
	if d := s.srv.cfg.StatementTimeout; d > 0 && len(s.pending) > 0 && s.headCancels != s.pending[0] {
		t := time.NewTimer(d - time.Since(s.headSince))
		stmt, timers = t.C, append(timers, t)
	}
	return idle, stmt, func() {
		for _, t := range timers {
			t.Stop()
		}
	}
}

// clientGone ends the session after its client went away or broke the
// protocol; whatever transaction it had open is rolled back.
func (s *session) clientGone(err error) error {
	if _, ok := asSQLError(err); ok {
		return err
	}
	if clientWentAway(err) {
		return err
	}
	return fatal(codeProtocol, "invalid message from the client: "+err.Error())
}
