package main

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/policy"
)

// TestConnectionLost: serve's start-up steps after the first ping wait
// while PostgreSQL is cut off again (a partition, a restart, a session
// ended under them) and fail at once on their own verdict; each error
// here is a real one.
func TestConnectionLost(t *testing.T) {
	ctx := t.Context()
	url := testenv.NewDatabase(t)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	_, refused := pgx.Connect(ctx, "postgres://x@"+closed+"/x?connect_timeout=2")

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	_, noTable := conn.Exec(ctx, "SELECT FROM no_such_table")
	_, wrongSchema := checkSchema(ctx, conn, "serve")

	victim, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend($1)", victim.PgConn().PID()); err != nil {
		t.Fatal(err)
	}
	_, terminated := victim.Exec(ctx, "SELECT 1")
	_, afterEnd := victim.Exec(ctx, "SELECT 1") // pgx knows by now: ErrConnClosed

	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"a refused connection", refused, true},
		{"a session ended under a step", terminated, true},
		{"a statement on a session that ended", afterEnd, true},
		{"a statement PostgreSQL refuses", noTable, false},
		{"a database without the schema", wrongSchema, false},
		{"a policy PostgreSQL refuses", &policy.Error{File: "p.yaml"}, false},
		{"any other error", errors.New("x"), false},
	} {
		if c.err == nil {
			t.Fatalf("%s: no error to classify", c.name)
		}
		if got := connectionLost(c.err); got != c.want {
			t.Errorf("connectionLost(%s: %v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
