package fence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/fence"
)

// TestStaleStatementsRunAgain: a write's statements are prepared on its
// connection once; when they go stale there (the session's statements
// dropped, or a migration changing what one returns), the next write on
// that connection is still applied, once, and so is the one after it.
func TestStaleStatementsRunAgain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stale func(t *testing.T, d *db, conn *pgxpool.Conn)
	}{
		{"the session's statements dropped", func(t *testing.T, d *db, conn *pgxpool.Conn) {
			// Behind pgx's back: pgx still takes them for prepared.
			if _, err := conn.Conn().PgConn().Exec(t.Context(), "DEALLOCATE ALL").ReadAll(); err != nil {
				t.Fatal(err)
			}
		}},
		{"a migration changed what a statement returns", func(t *testing.T, d *db, _ *pgxpool.Conn) {
			changeWhatNotAfterReturns(t, d)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDB(t)
			cfg, err := pgxpool.ParseConfig(d.pool.Config().ConnString())
			if err != nil {
				t.Fatal(err)
			}
			cfg.MaxConns = 1 // every write on the one connection whose statements go stale
			fence.ConfigurePool(cfg)
			pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			store, err := fence.New(fence.Config{Pool: pool, NoCoalescing: true})
			if err != nil {
				t.Fatal(err)
			}
			before := d.balance("acct-1")
			credit := func(rev int64) {
				t.Helper()
				req, err := fence.NewRequest([]fence.Write{d.write("credit", `{"account": "acct-1", "amount_cents": 1}`, tok(rev))}, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.NotAfter = time.Now().Add(time.Hour)
				if _, err := store.Apply(context.Background(), req); err != nil {
					t.Fatalf("credit with token %d: %v", rev, err)
				}
			}
			credit(1) // prepares its statements
			conn, err := pool.Acquire(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			tc.stale(t, d, conn)
			conn.Release()
			credit(2)
			credit(3)
			if got, want := d.balance("acct-1"), before+3; got != want {
				t.Fatalf("balance %d, want %d: three credits, each applied once", got, want)
			}
			if got, want := d.fence("account/acct-1"), "1:3#3"; got != want {
				t.Fatalf("fence %s, want %s", got, want)
			}
		})
	}
}

// TestAGroupsStaleStatementsRunAgain: a group of writes that waited for
// the one connection, whose statements went stale there (a migration
// changed what one returns, which pgx's own statements on the connection
// return too), is applied, each write once, in one transaction; when
// one write of the group is refused, so that the others run again in
// savepoints through pgx's statements, they are applied all the same.
func TestAGroupsStaleStatementsRunAgain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refused bool // acct-44's write: a debit beyond its balance
	}{
		{"every write applies", false},
		{"one write is refused", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDB(t)
			gs := newGroupStore(t, d, 1, newCommitGate())
			ctx := context.Background()
			bounded := func(w fence.Write, key *fence.IdempotencyKey) *fence.Request {
				t.Helper()
				req, err := fence.NewRequest([]fence.Write{w}, key)
				if err != nil {
					t.Fatal(err)
				}
				req.NotAfter = time.Now().Add(time.Hour)
				return req
			}
			// The connection's statements, prepared: a lone write's by
			// name, a keyed write's by pgx.
			key := &fence.IdempotencyKey{Client: "t", Scope: "credit", Value: "k", Retention: time.Hour}
			for _, req := range []*fence.Request{bounded(credit(d, "acct-40", 1), nil), bounded(credit(d, "acct-41", 1), key)} {
				if _, err := gs.Apply(ctx, req); err != nil {
					t.Fatal(err)
				}
			}
			changeWhatNotAfterReturns(t, d)
			release, first := occupy(t, d, gs, "acct-42")
			writes := []fence.Write{credit(d, "acct-43", 1), credit(d, "acct-44", 1), credit(d, "acct-45", 1)}
			if tc.refused {
				writes[1] = debit(d, "acct-44", 5000, 1)
			}
			var starts []func() <-chan reply
			for _, w := range writes {
				starts = append(starts, func() <-chan reply {
					req := bounded(w, nil)
					ch := make(chan reply, 1)
					go func() {
						resp, err := gs.Apply(ctx, req)
						ch <- reply{resp, err}
					}()
					return ch
				})
			}
			for i, o := range settled(t, release, first, inLine(t, gs, starts...)) {
				var pre *fence.PreconditionError
				if refused := tc.refused && i == 1; refused != errors.As(o.err, &pre) || (!refused && o.err != nil) {
					t.Errorf("write %d: %v", i, o.err)
				}
			}
			if tc.refused {
				credited(t, d, "acct-43", "acct-45")
				if got := d.balance("acct-44"); got != 1000 {
					t.Errorf("acct-44 = %d, want 1000: refused", got)
				}
			} else {
				credited(t, d, "acct-43", "acct-44", "acct-45")
				var txs int
				if err := d.pool.QueryRow(ctx, "SELECT count(DISTINCT xmin::text) FROM demo.accounts WHERE id IN ('acct-43', 'acct-44', 'acct-45')").Scan(&txs); err != nil {
					t.Fatal(err)
				}
				if txs != 1 {
					t.Errorf("the group's writes committed in %d transactions, want 1", txs)
				}
			}
			groupedIn(t, gs, len(writes))
		})
	}
}

// changeWhatNotAfterReturns changes what fencegw.not_after returns, as a
// migration might: a statement that calls it, prepared before, is stale.
func changeWhatNotAfterReturns(t *testing.T, d *db) {
	t.Helper()
	_, err := d.pool.Exec(t.Context(), `DROP FUNCTION fencegw.not_after(timestamptz);
		CREATE FUNCTION fencegw.not_after(p_deadline timestamptz) RETURNS boolean LANGUAGE plpgsql AS $$
		BEGIN
			IF clock_timestamp() > p_deadline THEN
				RAISE EXCEPTION USING ERRCODE = 'FG410', MESSAGE = 'deadline passed', DETAIL = clock_timestamp()::text;
			END IF;
			RETURN true;
		END $$`)
	if err != nil {
		t.Fatal(err)
	}
}
