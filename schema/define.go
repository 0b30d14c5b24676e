package schema

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// definitionsLock is the advisory lock definers of one database take for
// their transaction ("fencegwd" in ASCII). Two `migrate up` at once (one
// per replica starting) would otherwise both create the table, or replace
// one function at the same moment, which PostgreSQL refuses ("tuple
// concurrently updated"); in turn, the second finds nothing left to do.
const definitionsLock int64 = 0x66656e6365677764

// createDefinitionsTable is created by the first Up that defines anything.
// Anyone may read it: it holds checksums, and a gateway's role checks its
// functions against it at start-up and in /readyz.
var createDefinitionsTable = `CREATE TABLE ` + definitionsTable + ` (
	name        text        NOT NULL, -- the function: fencegw.fence
	file_sha256 text        NOT NULL, -- of the file that defined it
	sql_sha256  text        NOT NULL, -- of what the database then held (heldSum)
	defined_at  timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (name, file_sha256)
);
GRANT SELECT ON ` + definitionsTable + ` TO PUBLIC`

// define applies those of defs, m's definitions, that the database does
// not hold as their files make them.
func (m *Migrator) define(defs []definition) error {
	if len(defs) == 0 {
		return nil
	}
	// Up takes no context: golang-migrate's calls take none either.
	ctx := context.Background()
	conn, err := pgx.ConnectConfig(ctx, m.cfg)
	if err != nil {
		return fmt.Errorf("schema: define: %w", err)
	}
	defer conn.Close(ctx)
	applied, err := define(ctx, conn, defs)
	for _, name := range applied {
		if m.out != nil {
			fmt.Fprintf(m.out, "defined %s\n", name)
		}
	}
	return err
}

// define applies, in one transaction, every one of defs the database does
// not hold as its file makes it, records what the database then holds, and
// returns the names applied. One that fails, or that leaves an overload
// its file does not define, undoes them all. Replicas calling a function
// while it is replaced are not waited for, nor do they wait: each call
// runs the definition it started with.
func define(ctx context.Context, conn *pgx.Conn, defs []definition) (applied []string, err error) {
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", definitionsLock); err != nil {
			return fmt.Errorf("schema: define: %w", err)
		}
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", definitionsTable).Scan(&exists); err != nil {
			return fmt.Errorf("schema: define: %w", err)
		}
		if !exists {
			if _, err := tx.Exec(ctx, createDefinitionsTable); err != nil {
				return fmt.Errorf("schema: define: create %s: %w", definitionsTable, err)
			}
		}
		names, sums := namesAndSums(defs)
		rows, err := tx.Query(ctx, notHeldSQL, names, sums)
		if err != nil {
			return fmt.Errorf("schema: define: %w", err)
		}
		stale, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("schema: define: %w", err)
		}
		for _, d := range defs {
			if !slices.Contains(stale, d.name) {
				continue
			}
			if err := apply(ctx, tx, d); err != nil {
				return err
			}
			applied = append(applied, d.name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}

// overloadsSQL lists the functions named $1 whose catalog row this
// transaction did not write: left behind by an earlier definition, or
// made by hand.
const overloadsSQL = `SELECT p.oid::regprocedure::text
	FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
	WHERE n.nspname = split_part($1, '.', 1) AND p.proname = split_part($1, '.', 2)
	  AND p.prokind <> 'a' AND p.xmin <> pg_current_xact_id()::xid
	ORDER BY 1`

// apply runs d's file and records what the database then holds.
func apply(ctx context.Context, tx pgx.Tx, d definition) error {
	if _, err := tx.Exec(ctx, d.sql); err != nil {
		return fmt.Errorf("schema: define %s: %w", d.name, err)
	}
	// Recorded, an overload the file does not define would pass for it.
	rows, err := tx.Query(ctx, overloadsSQL, d.name)
	if err != nil {
		return fmt.Errorf("schema: define %s: %w", d.name, err)
	}
	others, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("schema: define %s: %w", d.name, err)
	}
	if len(others) > 0 {
		return fmt.Errorf("schema: define %s: %s is not this binary's (its file defines no such function): drop it by hand, then run up again",
			d.name, strings.Join(others, ", "))
	}
	var sum *string
	if err := tx.QueryRow(ctx, "SELECT "+heldSum("$1::text"), d.name).Scan(&sum); err != nil {
		return fmt.Errorf("schema: define %s: %w", d.name, err)
	}
	if sum == nil {
		return fmt.Errorf("schema: define %s: its file creates no function %s", d.name, d.name)
	}
	_, err = tx.Exec(ctx, `INSERT INTO `+definitionsTable+` (name, file_sha256, sql_sha256) VALUES ($1, $2, $3)
		ON CONFLICT (name, file_sha256) DO UPDATE SET sql_sha256 = EXCLUDED.sql_sha256, defined_at = now()`, d.name, d.sum, *sum)
	if err != nil {
		return fmt.Errorf("schema: define %s: %w", d.name, err)
	}
	return nil
}
