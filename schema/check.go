package schema

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// rowQuerier reads one row: a connection, a pool or a transaction.
type rowQuerier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}

// Applied reads the recorded version of src's table through q, for readiness
// checks that must not open a migrator per probe.
func Applied(ctx context.Context, q rowQuerier, table string) (version uint, dirty bool, err error) {
	var v int64
	err = q.QueryRow(ctx, "SELECT version, dirty FROM "+pgx.Identifier{VersionSchema, table}.Sanitize()+" LIMIT 1").Scan(&v, &dirty)
	if undefinedTable(err) || errors.Is(err, pgx.ErrNoRows) {
		return 0, false, ErrNoVersion
	}
	if err != nil {
		return 0, false, fmt.Errorf("schema: read version: %w", err)
	}
	return uint(v), dirty, nil
}

// State is what a database holds of a Source.
type State struct {
	Version uint
	Dirty   bool
	// Differ names the functions of the Source's definitions that the
	// database does not hold as their files make them: not defined by
	// this binary yet, dropped, edited by hand, or with an overload more.
	Differ []string
}

// DefinitionsDiffer says which functions differ from this binary's and
// what to do, or "" if none does.
func (s State) DefinitionsDiffer() string {
	switch len(s.Differ) {
	case 0:
		return ""
	case 1:
		return s.Differ[0] + " differs from this binary's: run `fencegw migrate up`"
	}
	return strings.Join(s.Differ, ", ") + " differ from this binary's: run `fencegw migrate up`"
}

// ReadState reads the recorded version of src's migrations and which of
// its definitions the database does not hold as their files make them, in
// one statement: for start-up and readiness checks, which must not open a
// migrator per probe. ErrNoVersion if no migration is applied.
func ReadState(ctx context.Context, q rowQuerier, src Source) (State, error) {
	defs, err := loadDefinitions(src.Definitions)
	if err != nil {
		return State{}, err
	}
	if len(defs) == 0 {
		version, dirty, err := Applied(ctx, q, src.Table)
		return State{Version: version, Dirty: dirty}, err
	}
	names, sums := namesAndSums(defs)
	var st State
	var v int64
	err = q.QueryRow(ctx, "SELECT version, dirty, ARRAY("+notHeldSQL+") FROM "+
		pgx.Identifier{VersionSchema, src.Table}.Sanitize()+" LIMIT 1", names, sums).Scan(&v, &st.Dirty, &st.Differ)
	switch {
	case undefinedTable(err):
		// The version table, or the definitions': asked alone, the
		// version says which. Without a record, nothing is defined.
		version, dirty, err := Applied(ctx, q, src.Table)
		return State{Version: version, Dirty: dirty, Differ: names}, err
	case errors.Is(err, pgx.ErrNoRows):
		return State{}, ErrNoVersion
	case err != nil:
		return State{}, fmt.Errorf("schema: read version and definitions: %w", err)
	}
	st.Version = uint(v)
	return st, nil
}

func undefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.UndefinedTable
}
