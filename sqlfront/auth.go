package sqlfront

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tlsfiles"
)

// Who connects. A client of the policy proves who it is as on HTTP: by a
// client certificate over TLS (the policy's certificate mapping), or by
// its bearer key as the password. A password crosses the network in the
// clear inside the protocol, so the front asks for one only over TLS or
// from the loopback interface; elsewhere it refuses before the client
// sends it. SCRAM is not offered: it needs a verifier derived from the
// password, and the policy holds only the key's SHA-256, which must not
// become a password of its own. The user name a client connects with is
// its name in the policy, and the client must have an sql_role.

// authenticate returns the client p's connection proves it is.
func (s *Server) authenticate(conn net.Conn, in *bufio.Reader, p startupPacket) (*policy.Client, error) {
	user := p.params["user"]
	pol := s.cfg.Policy
	if !pol.AuthRequired() {
		return nil, fatal(codeAuth, "the policy declares no clients: the SQL front serves none")
	}
	tc, isTLS := conn.(*tls.Conn)
	var st tls.ConnectionState
	if isTLS {
		st = tc.ConnectionState()
	}
	if s.cfg.ClientCAs != nil && len(st.PeerCertificates) > 0 {
		// As the HTTP path: the handshake proved the key, the chain is
		// checked here against the client CAs in force.
		leaf, err := tlsfiles.VerifyClient(&st, s.cfg.ClientCAs(), time.Now())
		if err != nil {
			return nil, fatal(codeAuth, "client certificate refused: "+err.Error())
		}
		c, err := pol.ClientByCertificate(leaf)
		if err != nil {
			return nil, fatal(codeAuth, "the client certificate names more than one client")
		}
		if c != nil {
			if c.Name != user {
				return nil, fatal(codeAuth, fmt.Sprintf("the client certificate names client %s: connect as user %s", c.Name, c.Name))
			}
			return withRole(c)
		}
	}
	if !isTLS && !loopback(conn.RemoteAddr()) {
		return nil, fatal(codeAuth, "the SQL front takes a password only over TLS or from this host: connect with sslmode=require")
	}
	if err := writeMessages(conn, &pgproto3.AuthenticationCleartextPassword{}); err != nil {
		return nil, err
	}
	f, err := readFrame(in, maxPassword)
	if err != nil {
		return nil, err
	}
	var pw pgproto3.PasswordMessage
	if f.typ != 'p' || pw.Decode(f.body()) != nil {
		return nil, fatal(codeProtocol, fmt.Sprintf("expected a password, got message type %q", f.typ))
	}
	c, _ := pol.Authenticate(pw.Password)
	if c == nil || c.Name != user {
		// Whether the user or the key was wrong is not the caller's to learn.
		return nil, fatal(codePassword, fmt.Sprintf("password authentication failed for user %q", clipName(user)))
	}
	return withRole(c)
}

// maxPassword bounds a password message: a bearer key is far shorter.
const maxPassword = 4 << 10

// withRole refuses a client without an sql_role.
func withRole(c *policy.Client) (*policy.Client, error) {
	if c.SQLRole() == "" {
		return nil, fatal(codeAuth, fmt.Sprintf("client %s has no sql_role in the policy: it cannot use the SQL front", c.Name))
	}
	return c, nil
}

// loopback reports whether a is on the loopback interface (or a Unix
// socket): a password sent from there crosses no network.
func loopback(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}

// admit counts a session of client against the per-client limit, and
// returns what uncounts it.
func (s *Server) admit(client string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perClient[client] >= s.cfg.MaxClientConnections {
		return nil, fatal(codeTooMany, fmt.Sprintf("too many connections for client %s: at most %d", client, s.cfg.MaxClientConnections))
	}
	s.perClient[client]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.perClient[client]--; s.perClient[client] == 0 {
			delete(s.perClient, client)
		}
	}, nil
}
