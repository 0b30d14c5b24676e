package sqlfront

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/policy"
)

// backend is a session's connection to PostgreSQL, logged in as its
// client's sql_role, taken over from pgconn once it is ready.
type backend struct {
	conn   net.Conn
	pid    uint32
	key    []byte
	dial   pgconn.DialFunc
	params map[string]string // the parameters it reported at startup
}

// connectBackend logs in to PostgreSQL as role with the client's startup
// parameters (those the front passes on: backendParams).
func (s *Server) connectBackend(ctx context.Context, role string, params map[string]string) (*backend, error) {
	cfg := s.cfg.Backend.Copy()
	cfg.User, cfg.Password = role, ""
	if s.cfg.Password != nil {
		cfg.Password = s.cfg.Password(role)
	}
	cfg.RuntimeParams = params
	cfg.OnNotice, cfg.OnNotification, cfg.OnPgError = nil, nil, nil
	pc, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	hc, err := pc.Hijack()
	if err != nil {
		pc.Close(ctx)
		return nil, err
	}
	if hc.Frontend.ReadBufferLen() > 0 {
		// The session reads the connection from here on, frame by frame:
		// nothing may be left in pgconn's buffer. PostgreSQL sends
		// nothing after its first ReadyForQuery until asked.
		hc.Conn.Close()
		return nil, errors.New("sqlfront: PostgreSQL sent more than its greeting before the session began")
	}
	return &backend{conn: hc.Conn, pid: hc.PID, key: hc.SecretKey, dial: cfg.DialFunc, params: hc.ParameterStatuses}, nil
}

// cancel asks PostgreSQL to cancel what the backend is running, on a
// connection of its own, as pgconn's CancelRequest does.
func (b *backend) cancel(ctx context.Context) error {
	addr := b.conn.RemoteAddr()
	c, err := b.dial(ctx, addr.Network(), addr.String())
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := writeFrontend(c, &pgproto3.CancelRequest{ProcessID: b.pid, SecretKey: b.key}); err != nil {
		return err
	}
	_, _ = c.Read(make([]byte, 1)) // PostgreSQL closes it once it has read the request
	return nil
}

// backendParams are the client's startup parameters that PostgreSQL gets:
// all but the login's own (user, database), replication (the front
// relays sessions, not replication), and the ones that would let the
// session outrun the front: fencegw.* (the front's), command-line
// options (any setting, unread), and a client_min_messages that hides
// warnings. client_min_messages is notice unless the client asks for
// another that passes warnings.
func backendParams(client map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range client {
		switch lk := strings.ToLower(k); {
		case lk == "user" || lk == "database":
		case lk == "replication":
			if v != "" && v != "false" && v != "off" && v != "0" && v != "no" {
				return nil, fatal(codeUnsupported, "the SQL front does not relay replication connections")
			}
		case lk == "options":
			if strings.TrimSpace(v) != "" {
				return nil, fatal(codeUnsupported, "the SQL front does not relay startup options (-c …): SET what you need once connected")
			}
		case strings.HasPrefix(lk, "fencegw."):
			return nil, fatal(codeBadTokens, "fencegw.* settings are the SQL front's: name a transaction's fences with SET LOCAL fencegw.tokens inside it")
		case lk == "client_min_messages":
			if !passesWarnings(token{kind: tWord, text: strings.ToLower(strings.TrimSpace(v))}) {
				return nil, fatal(codeUnsupported, "the SQL front must hear PostgreSQL's warnings: client_min_messages stays at warning or below")
			}
			out[k] = v
		default:
			out[k] = v
		}
	}
	if _, ok := out["client_min_messages"]; !ok {
		// PostgreSQL's default, set here so that a role's or a
		// database's setting cannot hide warnings from the front.
		out["client_min_messages"] = "notice"
	}
	return out, nil
}

// open begins client's session on conn: its role checked, its backend
// logged in and registered, the client told it is ready.
func (s *Server) open(conn net.Conn, in *bufio.Reader, client *policy.Client, params map[string]string) (*session, error) {
	if db := params["database"]; db != "" && db != s.cfg.Backend.Database {
		return nil, fatal(codeNoDatabase, fmt.Sprintf("database %q is not the one the SQL front serves (%s)", clipName(db), s.cfg.Backend.Database))
	}
	bp, err := backendParams(params)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startupTimeout)
	defer cancel()
	role := client.SQLRole()
	if err := fence.CheckFrontRole(ctx, s.cfg.Pool, role, guardedTables(s.cfg.Policy)); err != nil {
		s.log.Error("a client's sql_role cannot be fenced: its sessions are refused", "client", client.Name, "error", err.Error())
		if errors.Is(err, fence.ErrFrontRole) {
			return nil, fatal(codeAuth, fmt.Sprintf("the SQL front does not log in as client %s's role; the gateway's log says why", client.Name))
		}
		return nil, fatal(codeLost, "the SQL front cannot reach PostgreSQL")
	}
	be, err := s.connectBackend(ctx, role, bp)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && !pgconn.Timeout(err) {
			return nil, &sqlError{Code: pgErr.Code, Message: pgErr.Message, Detail: pgErr.Detail, Hint: pgErr.Hint, Fatal: true}
		}
		s.log.Warn("the SQL front could not log in to PostgreSQL", "client", client.Name, "role", role, "error", err.Error())
		return nil, fatal(codeLost, "the SQL front cannot reach PostgreSQL")
	}
	fs, err := fence.RegisterFrontSession(ctx, s.cfg.Pool, be.pid, role, client.Name)
	if err != nil {
		be.conn.Close()
		s.log.Warn("the SQL front could not register a session", "client", client.Name, "error", err.Error())
		return nil, fatal(codeLost, "the SQL front cannot reach PostgreSQL")
	}
	sess := s.newSession(conn, in, client, be, fs)
	greeting := []pgproto3.BackendMessage{&pgproto3.AuthenticationOk{}}
	for _, k := range slices.Sorted(maps.Keys(be.params)) {
		greeting = append(greeting, &pgproto3.ParameterStatus{Name: k, Value: be.params[k]})
	}
	greeting = append(greeting, &pgproto3.BackendKeyData{ProcessID: sess.key.pid, SecretKey: sess.key.secretBytes()},
		&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if err := writeMessages(conn, greeting...); err != nil {
		sess.end()
		return nil, err
	}
	return sess, nil
}

// guardedTables names the policy's guarded tables.
func guardedTables(pol *policy.Policy) []string {
	out := make([]string, len(pol.Guarded))
	for i, g := range pol.Guarded {
		out[i] = g.Table
	}
	return out
}

// writeFrontend writes one message of the frontend's to w.
func writeFrontend(w net.Conn, m pgproto3.FrontendMessage) error {
	b, err := m.Encode(nil)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
