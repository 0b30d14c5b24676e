package gateway_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// dumpedValue is one piece of what a database holds: a row as text, or a
// bytea value as its bytes.
type dumpedValue struct {
	where string // table, or table.column for a bytea value
	data  []byte
}

// dumpDatabase returns every row of every table outside the system
// schemas, the gateway's and the application's alike, as text; and, for
// every bytea column, each value's own bytes besides, since text shows
// bytea as hex (idempotency_keys.response holds JSON that way).
func dumpDatabase(t *testing.T, pool *pgxpool.Pool) []dumpedValue {
	t.Helper()
	ctx := context.Background()
	const userSchemas = "NOT IN ('pg_catalog', 'information_schema')"
	tables := queryStrings(t, pool, `SELECT format('%I.%I', schemaname, tablename) FROM pg_tables
		WHERE schemaname `+userSchemas+` ORDER BY 1`)
	var out []dumpedValue
	for _, table := range tables {
		for _, row := range queryStrings(t, pool, "SELECT t::text FROM "+table+" t") {
			out = append(out, dumpedValue{table, []byte(row)})
		}
	}
	rows, err := pool.Query(ctx, `SELECT format('%I.%I', table_schema, table_name), quote_ident(column_name)
		FROM information_schema.columns WHERE data_type = 'bytea' AND table_schema `+userSchemas)
	if err != nil {
		t.Fatal(err)
	}
	type column struct{ Table, Name string }
	cols, err := pgx.CollectRows(rows, pgx.RowToStructByPos[column])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cols {
		rows, err := pool.Query(ctx, "SELECT "+c.Name+" FROM "+c.Table+" WHERE "+c.Name+" IS NOT NULL")
		if err != nil {
			t.Fatal(err)
		}
		values, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			out = append(out, dumpedValue{c.Table + "." + c.Name, v})
		}
	}
	return out
}

func queryStrings(t *testing.T, pool *pgxpool.Pool, sql string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}
