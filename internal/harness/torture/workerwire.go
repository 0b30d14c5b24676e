package torture

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/internal/harness/torture/check"
	"github.com/fencegw/fencegw/tokens"
)

// wireWriter sends a worker's writes through the SQL front: the append
// of the policy as the application's own statements, in a transaction
// that names its fence and its key (wire.go).
type wireWriter struct {
	urls     []string // one per gateway's front
	pct      int
	unfenced bool // the control: no SET LOCAL fencegw.tokens
}

func newWireWriter(fronts, db, bearerFile string, pct int, unfenced bool) (*wireWriter, error) {
	key, err := os.ReadFile(bearerFile)
	if err != nil {
		return nil, err
	}
	w := &wireWriter{pct: pct, unfenced: unfenced}
	for _, a := range strings.Split(fronts, ",") {
		u := url.URL{Scheme: "postgres", User: url.UserPassword(wireClient, strings.TrimSpace(string(key))), Host: a, Path: "/" + db,
			RawQuery: "sslmode=disable&connect_timeout=3"}
		w.urls = append(w.urls, u.String())
	}
	if len(w.urls) == 0 {
		return nil, errors.New("torture-worker: --wire needs --fronts")
	}
	return w, nil
}

// wireWrite appends to resource with token through a random gateway's SQL
// front, on a connection of its own, whatever view says of the lease,
// and records what came of it.
func (w *worker) wireWrite(token, resource, intent string, view check.LeaseView) {
	ev := check.Event{Worker: w.id, Intent: intent, Resource: resource, Token: historyToken(token), Lease: view}
	w.record(ev, "invoke", "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	typ, detail := w.front.write(ctx, w.front.urls[w.rnd.IntN(len(w.front.urls))], token, resource, intent, w.id)
	w.record(ev, typ, detail)
}

// write appends through the front at url and says what came of it, as
// a history's event says it.
func (f *wireWriter) write(ctx context.Context, url, token, resource, intent string, worker int) (typ, detail string) {
	atCommit, err := f.append(ctx, url, token, resource, intent, worker)
	typ, detail = wireOutcome(err)
	if atCommit && detail == "stale-token" {
		// The COMMIT of a transaction whose fence held, refused because a
		// newer holder was granted the lock meanwhile (who cannot have
		// written: the transaction held the fence row): a refusal that
		// met no newer token, which the checker must not take for one.
		detail = "lease-lost-at-commit"
	}
	return typ, detail
}

// append runs the transaction; atCommit: its error is the COMMIT's.
func (f *wireWriter) append(ctx context.Context, url, token, resource, intent string, worker int) (atCommit bool, err error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	tok, err := tokens.Parse(token)
	if err != nil {
		return false, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.Background())
	if !f.unfenced {
		if _, err := tx.Exec(ctx, "SELECT set_config('fencegw.tokens', $1, true)", resource+"="+token); err != nil {
			return false, err
		}
	}
	if _, err := tx.Exec(ctx, "SELECT fencegw.transaction_key($1)", intent); err != nil {
		return false, err
	}
	tag, err := tx.Exec(ctx, "UPDATE torture.balances SET cents = cents + 1 WHERE resource = $1", resource)
	if err == nil && tag.RowsAffected() != 1 {
		err = fmt.Errorf("torture-worker: %s has no balance", resource)
	}
	if err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, "INSERT INTO torture.log (resource, epoch, revision, intent, worker, delta) VALUES ($1, $2, $3, $4, $5, 1)",
		resource, tok.Epoch, tok.Revision, intent, worker); err != nil {
		return false, err
	}
	return true, tx.Commit(ctx)
}

// wireOutcome is what a write through the front became, as the history
// says it: ok; fail, with what refused it, when the front or PostgreSQL
// says nothing of it was committed; info (unknown) otherwise: a COMMIT
// answered 08007, a connection lost on the way.
func wireOutcome(err error) (string, string) {
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return "ok", ""
	case !errors.As(err, &pgErr):
		return "info", err.Error()
	}
	switch pgErr.Code {
	case "FG409":
		return "fail", "stale-token"
	case "FG403":
		return "fail", "token-rejected"
	case "40001":
		return "fail", "unavailable" // the authority could not be asked: nothing written
	case "08006", "57014", "55P03", "40P01", "25P02", "57P01":
		// Refused, cancelled or rolled back with no COMMIT on its way:
		// the front answers 08007 when one was, and ends a session at
		// shutdown (57P01) only once nothing is on its way.
		return "fail", "sqlstate " + pgErr.Code
	}
	return "info", "sqlstate " + pgErr.Code + ": " + pgErr.Message
}
