package sqlfront_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestQueryExecModes: the fenced transaction in each of pgx's ways of
// sending a statement (named statements cached, described then executed,
// unnamed, the simple protocol), and pipelined as a batch.
func TestQueryExecModes(t *testing.T) {
	f := newFront(t)
	ctx := context.Background()
	const account, resource = "acct-41", "account/acct-41"
	l := f.lease(billing, resource, 60, 0)
	modes := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec,
		pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol}
	for _, mode := range modes {
		cfg, err := pgx.ParseConfig(f.url(billing))
		if err != nil {
			t.Fatal(err)
		}
		cfg.DefaultQueryExecMode = mode
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			var shown string
			if err := tx.QueryRow(ctx, "SELECT set_config('fencegw.tokens', $1, true)", resource+"="+l.Token).Scan(&shown); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "UPDATE demo.accounts SET balance_cents = balance_cents - $1 WHERE id = $2", 10, account)
			return err
		})
		if err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		// Pipelined: the fence and the writes in one batch.
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue("SELECT set_config('fencegw.tokens', $1, true)", resource+"="+l.Token)
			b.Queue("UPDATE demo.accounts SET balance_cents = balance_cents - $1 WHERE id = $2", 1, account)
			b.Queue("SELECT balance_cents FROM demo.accounts WHERE id = $1", account)
			return tx.SendBatch(ctx, b).Close()
		})
		if err != nil {
			t.Fatalf("%v, a batch: %v", mode, err)
		}
	}
	if got, want := f.state(account), fmt.Sprintf("balance %d, log []", 1000-11*len(modes)); got != want {
		t.Fatalf("%s, want %s", got, want)
	}
}

// TestStatementsAndSavepoints: a statement naming fences prepared by
// name, described and executed; a savepoint rolled back takes its fence
// with it (the guard refuses the write after it), and a fence set again
// writes; an error in a batch skips the rest of it and the session goes
// on; notices and parameter changes reach the client.
func TestStatementsAndSavepoints(t *testing.T) {
	f := newFront(t)
	ctx := context.Background()
	const account, resource = "acct-42", "account/acct-42"
	l := f.lease(billing, resource, 60, 0)
	var notices []string
	cfg, err := pgx.ParseConfig(f.url(billing))
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Message) }
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	sd, err := conn.Prepare(ctx, "fence", "SELECT set_config('fencegw.tokens', $1, true)")
	if err != nil {
		t.Fatal(err)
	}
	if len(sd.ParamOIDs) != 1 || len(sd.Fields) != 1 || sd.Fields[0].Name != "set_config" {
		t.Fatalf("the statement naming fences is described as %d parameters and fields %+v; want one text parameter and set_config", len(sd.ParamOIDs), sd.Fields)
	}
	write := strings.Replace(debit, "%s", account, 1)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		sql  string
		args []any
		code string
	}{
		{sql: "SAVEPOINT a"},
		{sql: "fence", args: []any{resource + "=" + l.Token}},
		{sql: write},
		{sql: "ROLLBACK TO SAVEPOINT a"},
		{sql: write, code: "FG403"},
		{sql: "ROLLBACK TO SAVEPOINT a"},
		{sql: "fence", args: []any{resource + "=" + l.Token}},
		{sql: write},
		{sql: "RELEASE SAVEPOINT a"},
	}
	for i, s := range steps {
		_, err := tx.Exec(ctx, s.sql, s.args...)
		if code := sqlState(err); code != s.code {
			t.Fatalf("step %d, %s: SQLSTATE %q, want %q", i, s.sql, code, s.code)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.state(account); got != "balance 900, log []" {
		t.Fatalf("%s, want one debit", got)
	}

	b := &pgx.Batch{}
	b.Queue("SELECT 1")
	b.Queue("SELECT 1 / $1::int", 0)
	b.Queue("SELECT 2")
	br := conn.SendBatch(ctx, b)
	_, e1 := br.Exec()
	_, e2 := br.Exec()
	_, e3 := br.Exec()
	br.Close()
	if e1 != nil || sqlState(e2) != "22012" || e3 == nil {
		t.Fatalf("a batch with an error in the middle: %v, %v, %v; want ok, 22012, skipped", e1, e2, e3)
	}
	if _, err := conn.Exec(ctx, `DO $$ BEGIN RAISE NOTICE 'noticed'; END $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET application_name = 'relayed'"); err != nil {
		t.Fatal(err)
	}
	if len(notices) != 1 || notices[0] != "noticed" || conn.PgConn().ParameterStatus("application_name") != "relayed" {
		t.Fatalf("notices %q, application_name %q; want the notice and the new name", notices, conn.PgConn().ParameterStatus("application_name"))
	}
}

// TestRefusedStatements: what the front does not relay is refused with a
// clear error, the transaction it was in fails with it, and the session
// goes on.
func TestRefusedStatements(t *testing.T) {
	f := newFront(t)
	ctx := context.Background()
	conn := f.connect(billing)
	for _, tc := range []struct{ sql, code string }{
		{"COPY demo.accounts TO STDOUT", "0A000"},
		{"COPY demo.accounts FROM STDIN", "0A000"},
		{"LISTEN ledger", "0A000"},
		{"SET client_min_messages = error", "0A000"},
		{"SET fencegw.resource = 'account/acct-1'", "FG400"},
		{"RESET fencegw.tokens", "FG400"},
	} {
		if _, err := conn.Exec(ctx, tc.sql); sqlState(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.sql, err, tc.code)
		}
		err := tryTx(t, conn, "SELECT 1", tc.sql)
		if sqlState(err) != tc.code {
			t.Errorf("%s in a transaction: %v, want %s", tc.sql, err, tc.code)
		}
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil {
		t.Fatalf("after the refusals: %v", err)
	}
}
