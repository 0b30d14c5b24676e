package sqlfront

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// serveConn serves one connection: its startup (TLS, the protocol's
// version, who the client is), then its session. over: the front was at
// its connection limit when this one came, and turns it away once it
// can be told why.
func (s *Server) serveConn(nc net.Conn, over bool) {
	_ = nc.SetDeadline(time.Now().Add(startupTimeout))
	conn, p, err := s.handshake(nc)
	if err != nil || conn == nil {
		s.refuse(nc, err)
		return
	}
	if over {
		s.refuse(conn, fatal(codeTooMany, fmt.Sprintf("sorry, too many clients already: the SQL front serves at most %d connections", s.cfg.MaxConnections)))
		return
	}
	in := bufio.NewReaderSize(conn, 32<<10)
	if p.minor() != 0 || len(p.options) > 0 {
		// As PostgreSQL does: carry on in 3.0, naming what was not understood.
		if err := writeMessages(conn, &pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0, UnrecognizedOptions: p.options}); err != nil {
			return
		}
	}
	client, err := s.authenticate(conn, in, p)
	if err != nil {
		s.refuse(conn, err)
		return
	}
	release, err := s.admit(client.Name)
	if err != nil {
		s.refuse(conn, err)
		return
	}
	defer release()
	sess, err := s.open(conn, in, client, p.params)
	if err != nil {
		s.refuse(conn, err)
		return
	}
	if !s.started(nc) {
		sess.end()
		return
	}
	_ = conn.SetDeadline(time.Time{})
	sess.run()
}

// handshake reads the startup phase's packets up to the StartupMessage,
// answering an SSLRequest (TLS if the front has it) and a GSSENCRequest
// (no) on the way. It returns the connection to go on with, TLS or not;
// nil after a CancelRequest, which it has handled.
func (s *Server) handshake(nc net.Conn) (net.Conn, startupPacket, error) {
	conn := nc
	for range 3 { // a GSSENCRequest, then an SSLRequest, then the StartupMessage
		p, err := readStartupPacket(conn)
		if err != nil {
			return conn, p, err
		}
		switch p.code {
		case codeSSLRequest:
			_, isTLS := conn.(*tls.Conn)
			if isTLS {
				return conn, p, fatal(codeProtocol, "SSLRequest on a connection already encrypted")
			}
			if s.cfg.TLS == nil {
				if _, err := conn.Write([]byte{'N'}); err != nil {
					return conn, p, err
				}
				continue
			}
			if _, err := conn.Write([]byte{'S'}); err != nil {
				return conn, p, err
			}
			tc := tls.Server(conn, s.tlsConfig())
			if err := tc.Handshake(); err != nil {
				return nil, p, fmt.Errorf("TLS handshake: %w", err)
			}
			conn = tc
		case codeGSSENCRequest:
			if _, err := conn.Write([]byte{'N'}); err != nil {
				return conn, p, err
			}
		case codeCancelRequest:
			s.cancel(p.cancel)
			return nil, p, nil
		default:
			return conn, p, nil
		}
	}
	return conn, startupPacket{}, fatal(codeProtocol, "too many requests before the startup message")
}

// tlsConfig is the front's TLS, offering the protocol's ALPN name, which
// a client connecting with TLS straight away (PostgreSQL 17's
// sslnegotiation=direct) insists on; a client that offers none is served
// too.
func (s *Server) tlsConfig() *tls.Config {
	c := s.cfg.TLS.Clone()
	c.NextProtos = []string{"postgresql"}
	if c.MinVersion < tls.VersionTLS12 {
		c.MinVersion = tls.VersionTLS12
	}
	return c
}

// refuse tells the client why its connection ends, if err says, and logs
// it; a client that went away, or a cancel handled, needs neither.
func (s *Server) refuse(conn net.Conn, err error) {
	if err == nil || clientWentAway(err) {
		return
	}
	se, ok := asSQLError(err)
	if !ok {
		s.log.Info("connection ended before its session began", "remote", conn.RemoteAddr().String(), "error", err.Error())
		return
	}
	se.Fatal = true
	s.log.Info("connection refused", "remote", conn.RemoteAddr().String(), "sqlstate", se.Code, "error", se.Message)
	_ = writeMessages(conn, se.response())
}

// writeMessages writes msgs to w at once.
func writeMessages(w io.Writer, msgs ...pgproto3.BackendMessage) error {
	var buf []byte
	for _, m := range msgs {
		var err error
		if buf, err = m.Encode(buf); err != nil {
			return err
		}
	}
	_, err := w.Write(buf)
	return err
}
