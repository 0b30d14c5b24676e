package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jackc/pgx/v5"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/schema"
)

// dialEtcd is the etcd client of the one-shot commands (dev, epoch,
// inspect): etcd's own client log is noise on a terminal.
func dialEtcd(endpoints []string) (*clientv3.Client, error) {
	return authority.Dial(endpoints)
}

// etcdError names the endpoints in an error that says etcd could not be
// asked, and the command that asked.
func etcdError(cmd string, endpoints []string, err error) error {
	if errors.Is(err, authority.ErrUnavailable) {
		return fmt.Errorf("%s: etcd at %s: %w", cmd, strings.Join(endpoints, ","), err)
	}
	return err
}

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
// for etcd, instead of exiting. A schema that is wrong fails at once.
func awaitSchema(ctx context.Context, pool *pgxpool.Pool, cmd string) (uint, error) {
	switch err := retryWhile(ctx, unreachable, func() error { return pool.Ping(ctx) }); {
	case err != nil && unreachable(err):
		return 0, fmt.Errorf("%s: database unreachable: %w", cmd, err)
	case err != nil:
		return 0, fmt.Errorf("%s: database: %w", cmd, err)
	}
	return checkSchema(ctx, pool, cmd)
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

// checkSchema refuses to go on unless the gateway's schema is exactly the
// version this binary was built with, and returns that version.
func checkSchema(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, cmd string) (uint, error) {
	want, err := schema.Latest(schema.Gateway())
	if err != nil {
		return 0, err
	}
	v, dirty, err := schema.Applied(ctx, q, schema.GatewayTable)
	switch {
	case errors.Is(err, schema.ErrNoVersion):
		return 0, fmt.Errorf("%s: the database has no fencegw schema: run `fencegw migrate up` first", cmd)
	case err != nil:
		return 0, fmt.Errorf("%s: %w", cmd, err)
	case dirty:
		return 0, fmt.Errorf("%s: the fencegw schema is dirty at version %d: a migration failed halfway; see `fencegw migrate version`", cmd, v)
	case v != want:
		return 0, fmt.Errorf("%s: the fencegw schema is at version %d, this binary needs %d: run `fencegw migrate up` with this binary", cmd, v, want)
	}
	return want, nil
}
