package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/schema"
)

// openMigrated connects to a database whose gateway schema is exactly this
// binary's, or says how to get there; cmd names the command in errors.
func openMigrated(ctx context.Context, url, cmd string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("%s: database: %w", cmd, err)
	}
	if _, err := checkSchema(ctx, conn, cmd); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// awaitSchema is checkSchema once PostgreSQL answers: while it cannot be
// reached (restarting, failing over, not up yet) it is asked again until
// ctx ends, so a gateway started in that window waits for it, as it waits
// for etcd, instead of exiting. A schema that is wrong, or functions the
// database holds otherwise than this binary defines them, fail at once.
func awaitSchema(ctx context.Context, pool *pgxpool.Pool, cmd string) (uint, error) {
	switch err := retryWhile(ctx, unreachable, func() error { return pool.Ping(ctx) }); {
	case err != nil && unreachable(err):
		return 0, fmt.Errorf("%s: database unreachable: %w", cmd, err)
	case err != nil:
		return 0, fmt.Errorf("%s: database: %w", cmd, err)
	}
	// PostgreSQL may go away again between the ping and the read (a
	// partition, a restart): that is waited out too.
	var st schema.State
	if err := retryWhile(ctx, connectionLost, func() (err error) { st, err = checkSchema(ctx, pool, cmd); return err }); err != nil {
		return 0, err
	}
	// The gateway's writes run its functions: someone else's fence is no
	// fence. The one-shot commands do not ask, so inspect still works on
	// such a database.
	if differ := st.DefinitionsDiffer(); differ != "" {
		return 0, fmt.Errorf("%s: %s", cmd, differ)
	}
	return st.Version, nil
}

// retryWhile calls f again while its error is transient, until ctx ends,
// and returns its last error: nil, one that is not transient (at once), or
// the transient one that outlasted ctx. serve's start-up waits this way
// for PostgreSQL and etcd that are not up yet, restarting, failing over
// or being restored, instead of exiting.
func retryWhile(ctx context.Context, transient func(error) bool, f func() error) error {
	for {
		err := f()
		if err == nil || !transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// etcdUnavailable reports whether err says etcd could not be asked (down,
// being restored, no leader yet), rather than that it answered.
func etcdUnavailable(err error) bool { return errors.Is(err, authority.ErrUnavailable) }

// unreachable reports whether err says PostgreSQL could not be talked to,
// rather than that it answered: no server error at all (refused, reset,
// no server accepting writes), or one saying it is starting, stopping or
// out of connections.
func unreachable(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return true
	}
	return pgerrcode.IsConnectionException(pgErr.Code) || pgerrcode.IsOperatorIntervention(pgErr.Code) ||
		pgErr.Code == pgerrcode.TooManyConnections
}

// connectionLost reports whether err says the talk with PostgreSQL broke
// off (the network, the server going away or refusing connections),
// unlike unreachable, which also takes any error that is not the
// server's: a start-up step's own verdict (a wrong schema, a policy
// PostgreSQL refuses) is then final, not waited on.
func connectionLost(err error) bool {
	var pgErr *pgconn.PgError
	var connErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &pgErr):
		return unreachable(pgErr)
	case errors.As(err, &connErr), errors.As(err, &netErr):
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, pgconn.ErrConnClosed)
}

// checkSchema refuses to go on unless the gateway's schema is exactly the
// version this binary was built with, and returns what the database holds
// of it: that version, and the functions it holds otherwise than this
// binary defines them.
func checkSchema(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, cmd string) (schema.State, error) {
	want, err := schema.Latest(schema.Gateway())
	if err != nil {
		return schema.State{}, err
	}
	st, err := schema.ReadState(ctx, q, schema.Gateway())
	switch {
	case errors.Is(err, schema.ErrNoVersion):
		return st, fmt.Errorf("%s: the database has no fencegw schema: run `fencegw migrate up` first", cmd)
	case err != nil:
		return st, fmt.Errorf("%s: %w", cmd, err)
	case st.Dirty:
		return st, fmt.Errorf("%s: the fencegw schema is dirty at version %d: a migration failed halfway; see `fencegw migrate version`", cmd, st.Version)
	case st.Version != want:
		return st, fmt.Errorf("%s: the fencegw schema is at version %d, this binary needs %d: run `fencegw migrate up` with this binary", cmd, st.Version, want)
	}
	return st, nil
}
