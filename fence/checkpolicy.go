package fence

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/policy"
)

// CheckPolicy asks PostgreSQL to parse and plan every statement of pol
// without running it, so a typo in a table or column name stops start-up
// with the operation's name instead of failing the first client's write.
// ctx bounds the whole check.
func CheckPolicy(ctx context.Context, pool *pgxpool.Pool, pol *policy.Policy) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("fence: check policy: %w", err)
	}
	defer conn.Release()
	pe := &policy.Error{File: pol.Source}
	for _, name := range pol.OperationNames() {
		op := pol.Operations[name]
		for i := range op.Statements {
			// The unnamed statement is replaced by the next Prepare; nothing
			// is left behind on the pooled connection.
			_, err := conn.Conn().PgConn().Prepare(ctx, "", op.Statements[i].SQL, nil)
			var pgErr *pgconn.PgError
			switch {
			case err != nil && conn.Conn().PgConn().IsClosed():
				// The session ended under the check (a restart, an
				// administrator): no verdict on the statement.
				return fmt.Errorf("fence: check policy: %w", err)
			case errors.As(err, &pgErr):
				pe.Problems = append(pe.Problems, policy.Problem{
					Entry:   fmt.Sprintf("operations.%s.statements[%d]", name, i),
					Message: fmt.Sprintf("PostgreSQL refuses it: %s (SQLSTATE %s)", pgErr.Message, pgErr.Code),
				})
			case err != nil:
				return fmt.Errorf("fence: check policy: %w", err)
			}
		}
	}
	if len(pe.Problems) > 0 {
		return pe
	}
	return nil
}
