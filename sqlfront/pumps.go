package sqlfront

import (
	"net"
)

// The goroutines that move bytes for a session's loop: two readers, each
// handing the loop one message and waiting until it is done with it, and
// the writer of what the loop sends PostgreSQL.

func (s *session) readClient() {
	for {
		msg, err := s.in.Receive()
		select {
		case s.fromClient <- clientEvent{msg, err}:
		case <-s.done:
			return
		}
		if err != nil {
			return
		}
		select {
		case <-s.clientAck:
		case <-s.done:
			return
		}
	}
}

func (s *session) readBackend() {
	for {
		msg, err := s.be.fe.Receive()
		select {
		case s.fromBackend <- backendEvent{msg, err, err == nil && s.be.fe.ReadBufferLen() > 0}:
		case <-s.done:
			return
		}
		if err != nil {
			return
		}
		select {
		case <-s.backendAck:
		case <-s.done:
			return
		}
	}
}

func (s *session) writeBackend() {
	for {
		select {
		case b := <-s.toBackend:
			if _, err := s.be.conn.Write(b); err != nil {
				s.be.conn.Close() // the reader hears of it, and the loop from the reader
				return
			}
		case <-s.done:
			return
		}
	}
}

// sendBackend hands b to the writer, handling PostgreSQL's answers while
// the writer is busy.
func (s *session) sendBackend(b []byte) error {
	for {
		select {
		case s.toBackend <- b:
			return nil
		case ev := <-s.fromBackend:
			err := s.onBackend(ev)
			s.ackBackend(ev)
			if err != nil {
				return err
			}
		case <-s.done:
			return net.ErrClosed
		}
	}
}
