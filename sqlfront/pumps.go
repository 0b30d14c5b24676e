package sqlfront

import (
	"bufio"
	"errors"
	"net"
	"time"
)

// The goroutines that move bytes for a session's loop: two readers, each
// a few frames ahead of it, and the writer of what the loop sends
// PostgreSQL when it cannot go at once.

func (s *session) readClient() {
	for {
		f, err := readFrame(s.in, s.srv.cfg.MaxMessageBytes)
		select {
		case s.fromClient <- clientEvent{f, err, err == nil && aheadBuffered(s.in)}:
		case <-s.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (s *session) readBackend() {
	r := bufio.NewReaderSize(s.be.conn, 32<<10)
	for {
		f, err := readFrame(r, maxBackendFrame)
		select {
		case s.fromBackend <- backendEvent{f, err, err == nil && aheadBuffered(r)}:
		case <-s.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// maxBackendFrame is PostgreSQL's own bound on a message: 1 GB of a
// value and its header.
const maxBackendFrame = 1<<30 + 1<<20

func (s *session) writeBackend() {
	for {
		select {
		case b := <-s.toBackend:
			_, err := s.be.conn.Write(b)
			s.writing.Add(-1)
			if err != nil {
				s.be.conn.Close() // the reader hears of it, and the loop from the reader
				return
			}
		case <-s.done:
			return
		}
	}
}

// forwardRaw queues b, one whole frame, for PostgreSQL, and notes
// whether PostgreSQL has been asked to answer all it was sent: it answers
// the extended protocol's messages only at a Sync or a Flush (drain).
func (s *session) forwardRaw(b []byte) {
	s.toPG = append(s.toPG, b...)
	switch b[0] {
	case 'S', 'H', 'Q', 'f': // Sync, Flush, Query, CopyFail
		s.unasked = false
	default:
		s.unasked = true
	}
}

// directWrite bounds how long the loop itself writes to PostgreSQL: a
// write that takes longer (its socket full, PostgreSQL busy sending) is
// finished by the writer, while the loop goes on reading PostgreSQL's
// answers.
const directWrite = 2 * time.Millisecond

// flushBackend writes what was queued for PostgreSQL: itself when the
// writer has nothing in hand (most often, and a goroutine's wake-up
// saved), else, or for what does not go at once, through the writer,
// handling PostgreSQL's answers meanwhile.
func (s *session) flushBackend() error {
	if len(s.toPG) == 0 {
		return nil
	}
	b := s.toPG
	s.toPG = nil
	if s.writing.Load() == 0 {
		_ = s.be.conn.SetWriteDeadline(time.Now().Add(directWrite))
		n, err := s.be.conn.Write(b)
		_ = s.be.conn.SetWriteDeadline(time.Time{})
		var ne net.Error
		switch {
		case err == nil:
			return nil
		case !errors.As(err, &ne) || !ne.Timeout():
			s.be.conn.Close() // the reader hears of it, and the loop from the reader
			return nil
		}
		b = b[n:]
	}
	s.writing.Add(1)
	for {
		select {
		case s.toBackend <- b:
			return nil
		case ev := <-s.fromBackend:
			if err := s.onBackend(ev); err != nil {
				return err
			}
		case <-s.done:
			return net.ErrClosed
		}
	}
}
