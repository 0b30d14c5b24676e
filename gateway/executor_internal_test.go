package gateway

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/internal/testenv"
)

// TestWriteRefusesASessionInsideATransaction: a write's implicit
// transaction ends at its Sync, but inside an open transaction that Sync
// commits nothing, so a success there would be a lie. Both ways of writing
// refuse such a session before sending anything: 503, not applied.
func TestWriteRefusesASessionInsideATransaction(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), testenv.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release() // inside a transaction: the pool closes it
	if _, err := conn.Exec(t.Context(), "BEGIN"); err != nil {
		t.Fatal(err)
	}
	e := NewExecutor(pool)
	_, errLone := e.executeOn(t.Context(), conn, Write{})
	_, errOnce := e.executeOnceOn(t.Context(), conn, Write{}, Idempotency{}, renderResult)
	for name, err := range map[string]error{"executeOn": errLone, "executeOnceOn": errOnce} {
		if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
			t.Errorf("%s on a session inside a transaction: %v, want unavailable and not applied", name, err)
		}
	}
	if status := conn.Conn().PgConn().TxStatus(); status != 'T' {
		t.Errorf("transaction status %q: the refused writes sent something", status)
	}
}
