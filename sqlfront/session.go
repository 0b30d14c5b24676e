package sqlfront

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/admission"
	"github.com/fencegw/fencegw/policy"
)

// A session relays one client connection to its own backend. One
// goroutine, the loop, owns all of its state; three more only move
// bytes: one reads the client's frames, one PostgreSQL's, each ahead of
// the loop by a few frames; the third writes what the loop sends
// PostgreSQL, so that the loop goes on reading PostgreSQL's answers
// while it sends: a client pipelining more than the sockets buffer can
// never leave the two servers each waiting for the other to read. The
// loop handles every frame already read before it writes: what it owes
// either side goes out in one write each, not one per message.

// session is one client's connection and its backend.
type session struct {
	srv    *Server
	id     uint64    // the connection's number, for the audit and the log
	key    cancelKey // what the client cancels it with
	client *policy.Client
	remote string
	log    *slog.Logger
	conn   net.Conn
	in     *bufio.Reader // the client's frames
	out    []byte        // frames for the client, written when the loop would wait
	toPG   []byte        // frames for PostgreSQL, handed to the writer when the loop would wait
	be     *backend
	fs     *fence.FrontSession

	fromClient  chan clientEvent
	fromBackend chan backendEvent
	toBackend   chan []byte
	writing     atomic.Int32  // batches the writer has in hand
	done        chan struct{} // closed when the session ends
	stop        chan struct{} // closed by shutdown
	stopping    bool          // shutdown heard: no more of the client's, then the end
	stopOnce    sync.Once
	ended       sync.Once
	turn        *admission.Turn                         // at the front's gate (turn.go)
	waitCancel  atomic.Pointer[context.CancelCauseFunc] // ends a wait for the turn

	relay             // what PostgreSQL owes answers for (relay.go)
	statements        // the client's prepared statements and portals (extended.go)
	counted     int64 // statements run, for the audit
	standard    bool  // standard_conforming_strings, as PostgreSQL reports it
	utf8        bool  // client_encoding is UTF8
	headSince   time.Time
	headCancels *entry // the entry the statement timeout has cancelled
	// fenced are the fences the transaction in progress advanced, for
	// the check before its COMMIT (commitcheck.go).
	fenced map[string]fenced
	// unasked: PostgreSQL was sent messages after its last Sync or Flush
	// (forwardRaw).
	unasked bool
	// clientAhead, backendAhead: the last event of each reader said its
	// next frame is whole in memory (step).
	clientAhead, backendAhead bool
	// clientFlushes: the client sent a Flush since PostgreSQL's last
	// ReadyForQuery, and wants its answers as they come (step).
	clientFlushes bool
	// outReady: out holds a ReadyForQuery, the end of what a Sync or a
	// Query is owed (step).
	outReady bool
}

// clientEvent and backendEvent are a frame read, or why none could be;
// ahead says the next frame was already whole in the reader's buffer
// (aheadBuffered).
type clientEvent struct {
	f     frame
	err   error
	ahead bool
}

type backendEvent struct {
	f     frame
	err   error
	ahead bool
}

// cancelKey is the BackendKeyData a client gets: the front's own, never
// its backend's.
type cancelKey struct{ pid, secret uint32 }

func (k cancelKey) secretBytes() []byte { return binary.BigEndian.AppendUint32(nil, k.secret) }

func (s *Server) newSession(conn net.Conn, in *bufio.Reader, client *policy.Client, be *backend, fs *fence.FrontSession) *session {
	sess := &session{
		srv: s, id: s.nextID.Add(1), client: client, remote: conn.RemoteAddr().String(), conn: conn, in: in, be: be, fs: fs,
		// A few frames ahead: a client's are bounded by MaxMessageBytes each.
		fromClient: make(chan clientEvent, 4), fromBackend: make(chan backendEvent, 64), toBackend: make(chan []byte, 4),
		done: make(chan struct{}), stop: make(chan struct{}),
		turn:  s.gate.Turn(client.Name),
		relay: relay{tx: 'I'}, statements: newStatements(), fenced: map[string]fenced{},
		standard: be.params["standard_conforming_strings"] != "off", utf8: be.params["client_encoding"] == "UTF8",
	}
	sess.log = s.log.With("session", sess.id, "client", client.Name, "remote", sess.remote)
	s.mu.Lock()
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		sess.key = cancelKey{pid: binary.BigEndian.Uint32(b[:4])&0x7fffffff | 1, secret: binary.BigEndian.Uint32(b[4:])}
		if s.byKey[sess.key] == nil {
			break
		}
	}
	s.byKey[sess.key] = sess
	s.mu.Unlock()
	return sess
}

// run serves the session until it ends, and tells the client why if it
// was not the client that ended it.
func (s *session) run() {
	defer s.end()
	go s.readClient()
	go s.readBackend()
	go s.writeBackend()
	err := s.loop()
	if se, ok := asSQLError(err); ok {
		se.Fatal = true
		s.log.Info("session ended", "sqlstate", se.Code, "error", se.Message)
		s.send(se.response())
		_ = s.flush()
		return
	}
	if !errors.Is(err, errTerminated) && !clientWentAway(err) {
		s.log.Info("session ended", "error", err.Error())
	}
}

// errTerminated: the client said goodbye (Terminate).
var errTerminated = errors.New("sqlfront: the client terminated the session")

// end closes both connections, so that PostgreSQL rolls back whatever the
// session left open, and forgets the session's registration.
func (s *session) end() {
	s.ended.Do(func() {
		close(s.done)
		s.turn.Release()
		s.be.conn.Close()
		s.conn.Close()
		s.srv.mu.Lock()
		delete(s.srv.byKey, s.key)
		s.srv.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.fs.Unregister(ctx, s.srv.cfg.Pool); err != nil {
			s.log.Warn("a session of the SQL front stays registered until its pid is reused", "error", err.Error())
		}
	})
}

// shutdown asks the loop to end the session: the front is closing.
func (s *session) shutdown() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.cancelWait(errShuttingDown)
}

// send queues m, a message of the front's own, for the client.
func (s *session) send(m pgproto3.BackendMessage) {
	b, err := m.Encode(s.out)
	if err != nil {
		s.log.Error("a message for the client could not be encoded", "message", fmt.Sprintf("%T", m), "error", err.Error())
		return
	}
	s.out = b
	if _, ok := m.(*pgproto3.ReadyForQuery); ok {
		s.outReady = true
	}
}

// relayFrame queues f, as PostgreSQL sent it, for the client.
func (s *session) relayFrame(f frame) {
	if !s.muted {
		s.out = append(s.out, f.raw...)
		s.outReady = s.outReady || f.typ == 'Z'
	}
}

// flush writes what was queued for the client.
func (s *session) flush() error {
	if len(s.out) == 0 {
		return nil
	}
	_, err := s.conn.Write(s.out)
	s.outReady = false
	if cap(s.out) > 1<<20 {
		s.out = nil // one large result need not stay with the session
	} else {
		s.out = s.out[:0]
	}
	return err
}
