package schema

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Applied reads the recorded version of src's table through q, for readiness
// checks that must not open a migrator per probe.
func Applied(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, table string) (version uint, dirty bool, err error) {
	var v int64
	err = q.QueryRow(ctx, "SELECT version, dirty FROM "+pgx.Identifier{VersionSchema, table}.Sanitize()+" LIMIT 1").Scan(&v, &dirty)
	var pgErr *pgconn.PgError
	if errors.Is(err, pgx.ErrNoRows) || (errors.As(err, &pgErr) && pgErr.Code == pgerrcode.UndefinedTable) {
		return 0, false, ErrNoVersion
	}
	if err != nil {
		return 0, false, fmt.Errorf("schema: read version: %w", err)
	}
	return uint(v), dirty, nil
}
