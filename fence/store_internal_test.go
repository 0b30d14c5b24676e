package fence

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/internal/testenv"
)

// TestRequestRefusesASessionInsideATransaction: an implicit transaction
// ends at its Sync, but inside an open transaction that Sync commits
// nothing, so a success there would be a lie. Both transaction shapes
// refuse such a session before sending anything: unavailable, not applied.
func TestRequestRefusesASessionInsideATransaction(t *testing.T) {
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
	s := &Store{pool: pool}
	_, errImplicit := s.applyImplicit(t.Context(), conn, &Request{})
	p := &pending{req: &Request{Key: &Key{}}}
	s.runTx(t.Context(), conn, []*pending{p})
	for name, err := range map[string]error{"implicit": errImplicit, "explicit": p.err} {
		if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
			t.Errorf("%s transaction on a session inside a transaction: %v, want unavailable and not applied", name, err)
		}
	}
	if status := conn.Conn().PgConn().TxStatus(); status != 'T' {
		t.Errorf("transaction status %q: the refused requests sent something", status)
	}
}
