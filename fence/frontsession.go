package fence

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fencegw/fencegw/tokens"
)

// A session of the SQL front (package sqlfront) runs the application's
// statements on a backend logged in as the client's sql_role, a role
// that cannot fence. The front fences its transactions with
// fencegw.fence_session (sql/fence_session.sql), which asks for a MAC
// of the fences under a key the front registered for that backend
// through the gateway's own connection: only the front knows the key,
// and the front sends the statement, never the client.

// FrontSession is one backend of the SQL front, registered under its
// key.
type FrontSession struct {
	pid uint32
	key [32]byte
}

// FrontFence is one fence a front session's transaction asks for.
type FrontFence struct {
	Resource string
	Token    tokens.Token
	Strict   bool // token > fence, not >=
}

// Call is a statement the front sends on a session's backend connection
// itself, in the extended protocol: its text, its parameters' types and
// their values in text format. Only the parameters carry what varies, so
// that no value is ever read as SQL.
type Call struct {
	SQL       string
	ParamOIDs []uint32
	Params    [][]byte
}

// RegisterFrontSession records through db, the gateway's connection, that
// the backend pid, logged in as role for client, is a session of the SQL
// front, under a key made here. ctx bounds it. A row left by an earlier
// backend with the same pid is replaced.
func RegisterFrontSession(ctx context.Context, db DB, pid uint32, role, client string) (*FrontSession, error) {
	s := &FrontSession{pid: pid}
	_, _ = rand.Read(s.key[:]) // never fails, per crypto/rand docs
	_, err := db.Exec(ctx, `INSERT INTO fencegw.front_sessions AS s (pid, secret, role, client) VALUES ($1, $2, $3, $4)
		ON CONFLICT (pid) DO UPDATE SET secret = EXCLUDED.secret, role = EXCLUDED.role, client = EXCLUDED.client, started_at = now()`,
		int32(pid), s.key[:], role, client)
	if err != nil {
		return nil, fmt.Errorf("%w: register a session of the SQL front: %w", ErrUnavailable, err)
	}
	return s, nil
}

// Unregister deletes the session's row, so that its key fences nothing
// even if a later backend gets the pid. ctx bounds it.
func (s *FrontSession) Unregister(ctx context.Context, db DB) error {
	if _, err := db.Exec(ctx, "DELETE FROM fencegw.front_sessions WHERE pid = $1 AND secret = $2", int32(s.pid), s.key[:]); err != nil {
		return fmt.Errorf("%w: unregister a session of the SQL front: %w", ErrUnavailable, err)
	}
	return nil
}

// fenceSessionSQL fences a front session's transaction
// (sql/fence_session.sql).
const fenceSessionSQL = "SELECT fencegw.fence_session($1, $2, $3, $4, $5)"

// FenceCall is the statement that fences the session's current
// transaction on fences, in their order: the caller sorts them by
// resource, as every transaction of the gateway does, so that two
// transactions never wait on each other's fence rows. A stale token
// raises FG409. Its first parameter is the MAC fencegw.fence_session
// checks: of this backend's pid and the fences, under the session's key.
func (s *FrontSession) FenceCall(fences []FrontFence) Call {
	var resources, epochs, revisions, strict []string
	msg := strconv.FormatUint(uint64(s.pid), 10)
	for _, f := range fences {
		e, r, m := strconv.FormatInt(f.Token.Epoch, 10), strconv.FormatInt(f.Token.Revision, 10), map[bool]string{true: "t", false: "f"}[f.Strict]
		resources, epochs, revisions, strict = append(resources, arrayElement(f.Resource)), append(epochs, e), append(revisions, r), append(strict, m)
		msg += "\x1e" + f.Resource + "\x1f" + e + "\x1f" + r + "\x1f" + m
	}
	inner := sha256.Sum256([]byte(msg))
	mac := sha256.Sum256(append(s.key[:], inner[:]...))
	return Call{
		SQL:       fenceSessionSQL,
		ParamOIDs: []uint32{pgtype.ByteaOID, pgtype.TextArrayOID, pgtype.Int8ArrayOID, pgtype.Int8ArrayOID, pgtype.BoolArrayOID},
		Params: [][]byte{
			[]byte(`\x` + hex.EncodeToString(mac[:])),
			arrayText(resources), arrayText(epochs), arrayText(revisions), arrayText(strict),
		},
	}
}

// RefuseCall is the statement that raises code with message and detail
// in a front session's transaction (sql/refuse.sql): PostgreSQL aborts
// the transaction for it as for an error of its own.
func RefuseCall(code, message, detail string) Call {
	return Call{
		SQL:       "SELECT fencegw.refuse($1, $2, $3)",
		ParamOIDs: []uint32{pgtype.TextOID, pgtype.TextOID, pgtype.TextOID},
		Params:    [][]byte{[]byte(code), []byte(message), []byte(detail)},
	}
}

// arrayText is the text form of an array of elements already spelled.
func arrayText(elements []string) []byte {
	return []byte("{" + strings.Join(elements, ",") + "}")
}

// arrayElement spells s as an element of an array's text form: quoted,
// with the quote and the backslash escaped, so that no resource name
// (a comma, a brace, NULL) reads as anything but itself.
func arrayElement(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
