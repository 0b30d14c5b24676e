// The commit's warnings, heard by every round trip that commits: a COMMIT
// can succeed and still not have done what the server's configuration
// promises. A wait for synchronous replication that is
// cancelled (pg_cancel_backend by an operator, a job that cancels long
// queries) ends with a WARNING, "canceling wait for synchronous replication
// due to user request … committed locally, but might not have been
// replicated to the standby", and then the COMMIT's ordinary answer: the
// transaction is on the primary and perhaps on no standby, and a failover
// loses it. Such a commit is never acknowledged: every round trip that
// carries a commit compares the warnings heard on its connection before and
// after it (closeCommit), and one heard makes the outcome unknown
// (*CommitWarningError), its idempotency key unsettled, so that a retry
// with the key finds out what survived.
//
// The warning has no code of its own (01000, as every plain WARNING) and
// its text is translated, so any WARNING heard while committing counts: an
// application's deferred trigger that warns at COMMIT makes the outcome
// unknown too. Unknown is never a lie; 200 after that warning would be.
//
// Warnings reach the connection's notice handler, which ConfigurePool
// installs; New refuses a pool without it. A session whose
// client_min_messages is "error" would not be sent them at all, so
// ConfigurePool asks for warnings in the startup packet, which wins over a
// role's or a database's setting. The policy's statements must not change
// client_min_messages themselves.

package fence

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/outcome"
)

// ConfigurePool readies pc for a Store: its connections record the
// warnings PostgreSQL sends them, and are sent every warning. A
// client_min_messages that already passes warnings (debug to warning) is
// kept; any other is replaced. A notice handler pc had still runs.
func ConfigurePool(pc *pgxpool.Config) {
	cc := pc.ConnConfig
	if !passesWarnings(cc.RuntimeParams["client_min_messages"]) {
		cc.RuntimeParams["client_min_messages"] = "warning"
	}
	prev := cc.OnNotice
	cc.OnNotice = func(c *pgconn.PgConn, n *pgconn.Notice) {
		hear(c, n)
		if prev != nil {
			prev(c, n)
		}
	}
}

// NewPool is a pool of connections to url, readied for a Store.
func NewPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	ConfigurePool(pc)
	return pgxpool.NewWithConfig(ctx, pc)
}

// hearsWarnings reports whether pool's connections have a notice handler
// and are sent warnings: a guard against a pool not readied by
// ConfigurePool, not against one whose handler is someone else's.
func hearsWarnings(pool *pgxpool.Pool) bool {
	cc := pool.Config().ConnConfig
	return cc.OnNotice != nil && passesWarnings(cc.RuntimeParams["client_min_messages"])
}

// passesWarnings reports whether a client_min_messages level sends the
// client WARNING messages: every level from debug5 to warning does;
// error, an empty or an unknown one does not.
func passesWarnings(level string) bool {
	switch strings.ToLower(strings.TrimSpace(level)) {
	case "debug5", "debug4", "debug3", "debug2", "debug1", "debug", "log", "notice", "warning":
		return true
	}
	return false
}

// warningsKey is where a connection's warningsHeard is kept, in pgconn's
// per-connection CustomData.
const warningsKey = "fencegw.warnings"

// warningsHeard counts the warnings a connection was sent, and keeps the
// last one for the error that reports it. It is touched only by the
// goroutine reading the connection, which is its holder's.
type warningsHeard struct {
	n    uint64
	last pgconn.Notice
}

// hear records n on c if it is a warning: anything not known to be below
// one (NOTICE, INFO, LOG, DEBUG). A notice without its unlocalized
// severity (servers before 9.6) cannot be told apart, so it counts.
func hear(c *pgconn.PgConn, n *pgconn.Notice) {
	switch n.SeverityUnlocalized {
	case "NOTICE", "INFO", "LOG", "DEBUG":
		return
	}
	w, _ := c.CustomData()[warningsKey].(*warningsHeard)
	if w == nil {
		w = &warningsHeard{}
		c.CustomData()[warningsKey] = w
	}
	w.n++
	w.last = *n
}

// heard is how many warnings c has been sent so far.
func heard(c *pgconn.PgConn) uint64 {
	if w, _ := c.CustomData()[warningsKey].(*warningsHeard); w != nil {
		return w.n
	}
	return 0
}

// warnedSince returns a *CommitWarningError if c was sent a warning since
// it had heard before, else nil (always nil in a torture control run that
// ignores them).
func (s *Store) warnedSince(c *pgconn.PgConn, before uint64) error {
	w, _ := c.CustomData()[warningsKey].(*warningsHeard)
	if w == nil || w.n == before || s.unsafeIgnoreCommitWarnings {
		return nil
	}
	return &CommitWarningError{Code: w.last.Code, Message: w.last.Message, Detail: w.last.Detail}
}

// closeCommit closes br, a round trip on c that carries an implicit
// transaction's commit, its statements' results read, and returns br's
// error or a *CommitWarningError. sent is heard(c) from before br was
// sent. In the extended protocol PostgreSQL commits at Sync, after it has
// answered every statement, so the warnings from here on are the
// commit's; in the simple protocol it commits before it answers the last
// statement, whose own warnings then cannot be told from the commit's, so
// every warning since sent counts.
func (s *Store) closeCommit(c *pgconn.PgConn, br batchResults, sent uint64) error {
	before := heard(c)
	if s.simpleProtocol {
		before = sent
	}
	if err := br.Close(); err != nil {
		return err
	}
	return s.warnedSince(c, before)
}

// CommitWarningError is a COMMIT that PostgreSQL answered with a warning:
// committed on the server that answered, but perhaps not as durably as it
// is configured to be (a cancelled wait for synchronous replication). The
// outcome is unknown: it wraps ErrUnavailable and ErrOutcomeUnknown.
type CommitWarningError struct {
	Code, Message, Detail string // the warning's SQLSTATE and text, as sent
}

func (e *CommitWarningError) Error() string {
	return fmt.Sprintf("fence: PostgreSQL warned at COMMIT (%s, SQLSTATE %s): the commit may not survive a failover, outcome unknown",
		e.Message, e.Code)
}

func (e *CommitWarningError) Unwrap() []error { return []error{ErrUnavailable, ErrOutcomeUnknown} }

func (e *CommitWarningError) Outcome() outcome.Outcome { return outcome.Unknown }

// commitWarned reports whether err is a COMMIT answered with a warning:
// one that committed where it ran, as far as this session can tell, but
// may not last, as one whose answer was lost may or may not have.
func commitWarned(err error) bool {
	var warned *CommitWarningError
	return errors.As(err, &warned)
}
