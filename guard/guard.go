package guard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/policy"
)

// The triggers' names; Remove and Check touch no other trigger.
const (
	rowTrigger      = "fencegw_guard"
	truncateTrigger = "fencegw_guard_truncate"
)

// NotInPolicy is the Problem of a table that carries fencegw's triggers
// but is not in the policy Check was given.
const NotInPolicy = "not in the policy"

// ErrNotGuarded is wrapped by Check's error when a table the policy lists
// lacks its triggers, or has them with other arguments.
var ErrNotGuarded = errors.New("guard: not guarded as the policy says")

// Status is one guarded table as the database has it.
type Status struct {
	Table   string
	Problem string // "" when the triggers are as the policy says
}

// Install puts the triggers on every table pol guards, replacing any
// earlier version (and so repairing a disabled or altered one), all in one
// transaction: every table or none. It refuses a table the triggers could
// not guard exactly (see tableProblem).
func Install(ctx context.Context, conn *pgx.Conn, pol *policy.Policy) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// DDL on a busy table waits for its writers, and they for it.
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '5s'"); err != nil {
			return fmt.Errorf("guard: %w", err)
		}
		for _, g := range pol.Guarded {
			problem, err := tableProblem(ctx, tx, g)
			if err != nil {
				return fmt.Errorf("guard: install on %s: %w", g.Table, err)
			}
			if problem != "" {
				return fmt.Errorf("guard: install on %s: %s", g.Table, problem)
			}
			// Dropped and created, not replaced: a constraint trigger of
			// the same name cannot be replaced, and this also works on
			// PostgreSQL before 14.
			for _, ddl := range []string{dropDDL(rowTrigger, g), rowTriggerDDL(g), dropDDL(truncateTrigger, g), truncateTriggerDDL(g)} {
				if _, err := tx.Exec(ctx, ddl); err != nil {
					return fmt.Errorf("guard: install on %s: %w", g.Table, err)
				}
			}
		}
		return nil
	})
}

// Remove takes fencegw's triggers off every table pol guards, in one
// transaction, and returns the tables that do not exist (nothing to take
// off). Tables without the triggers are left alone.
func Remove(ctx context.Context, conn *pgx.Conn, pol *policy.Policy) (missing []string, err error) {
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '5s'"); err != nil {
			return fmt.Errorf("guard: %w", err)
		}
		for _, g := range pol.Guarded {
			var exists bool
			if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", tableIdent(g.Table)).Scan(&exists); err != nil {
				return fmt.Errorf("guard: %s: %w", g.Table, err)
			}
			if !exists {
				missing = append(missing, g.Table)
				continue
			}
			for _, name := range []string{rowTrigger, truncateTrigger} {
				if _, err := tx.Exec(ctx, dropDDL(name, g)); err != nil {
					return fmt.Errorf("guard: %s: %w", g.Table, err)
				}
			}
		}
		return nil
	})
	return missing, err
}

// Check reports, for every table pol guards, whether its triggers are there
// as the policy says, and wraps ErrNotGuarded in its error if any is not.
// It also reports tables that carry fencegw's triggers but are not in the
// policy (Problem "not in the policy"): harmless to Check's verdict, but
// they refuse writes the gateway will never make.
func Check(ctx context.Context, conn *pgx.Conn, pol *policy.Policy) ([]Status, error) {
	var out []Status
	bad := 0
	for _, g := range pol.Guarded {
		problem, err := checkTable(ctx, conn, g)
		if err != nil {
			return nil, fmt.Errorf("guard: %s: %w", g.Table, err)
		}
		if problem != "" {
			bad++
		}
		out = append(out, Status{Table: g.Table, Problem: problem})
	}
	stray, err := strayTables(ctx, conn, pol)
	if err != nil {
		return nil, err
	}
	for _, t := range stray {
		out = append(out, Status{Table: t, Problem: NotInPolicy})
	}
	if bad > 0 {
		return out, fmt.Errorf("%w: %d of %d table(s)", ErrNotGuarded, bad, len(pol.Guarded))
	}
	return out, nil
}

// triggerArgs spells g's key for the row trigger: "L" + a literal, "C" + a
// column (see fencegw.guard_row).
func triggerArgs(g *policy.GuardedTable) []string {
	var args []string
	for _, p := range g.KeyParts() {
		if p.Column != "" {
			args = append(args, "C"+p.Column)
		} else {
			args = append(args, "L"+p.Literal)
		}
	}
	return args
}

func dropDDL(trigger string, g *policy.GuardedTable) string {
	return fmt.Sprintf("DROP TRIGGER IF EXISTS %s ON %s", trigger, tableIdent(g.Table))
}

func rowTriggerDDL(g *policy.GuardedTable) string {
	quoted := make([]string, 0, len(g.KeyParts()))
	for _, a := range triggerArgs(g) {
		quoted = append(quoted, quoteLiteral(a))
	}
	return fmt.Sprintf("CREATE TRIGGER %s AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION fencegw.guard_row(%s)",
		rowTrigger, tableIdent(g.Table), strings.Join(quoted, ", "))
}

func truncateTriggerDDL(g *policy.GuardedTable) string {
	return fmt.Sprintf("CREATE TRIGGER %s BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION fencegw.guard_truncate()",
		truncateTrigger, tableIdent(g.Table))
}

// tableIdent quotes schema.table; the policy allows only plain lower-case
// names, so quoting changes nothing but is never skipped.
func tableIdent(table string) string {
	return pgx.Identifier(strings.SplitN(table, ".", 2)).Sanitize()
}

// quoteLiteral quotes s as a standard SQL string literal. With
// standard_conforming_strings on (the default since 9.1) a backslash is an
// ordinary character; an E-prefixed literal makes that so whatever the
// setting. (A NUL, which PostgreSQL text cannot hold, makes the DDL fail.)
func quoteLiteral(s string) string {
	s = strings.ReplaceAll(s, `'`, `''`)
	if strings.Contains(s, `\`) {
		return `E'` + strings.ReplaceAll(s, `\`, `\\`) + `'`
	}
	return `'` + s + `'`
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// keyTypes are the column types whose text form is exactly how the gateway
// renders an argument into a key: strings as they are, integers in
// decimal. Others would refuse every write (numeric(10,2) renders 42 as
// 42.00, char(n) pads) or depend on the session (timestamps).
var keyTypes = []string{"text", "character varying", "smallint", "integer", "bigint"}

// tableProblem says why the triggers could not guard g's table exactly, or
// "": it must be a plain table, neither parent nor child of another (row
// triggers reach no partition and no child table, TRUNCATE triggers are
// not inherited), with every key column present and of a key type.
func tableProblem(ctx context.Context, q querier, g *policy.GuardedTable) (string, error) {
	var kind string
	var inherits bool
	err := q.QueryRow(ctx, `SELECT c.relkind::text, EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid OR i.inhparent = c.oid)
		FROM pg_class c WHERE c.oid = to_regclass($1)`, tableIdent(g.Table)).Scan(&kind, &inherits)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "no such table", nil
	case err != nil:
		return "", err
	case kind != "r":
		return "not a plain table: partitioned tables, views and foreign tables cannot be guarded", nil
	case inherits:
		return "has inheritance parents or children, which its triggers would not cover", nil
	}
	rows, err := q.Query(ctx, `SELECT attname, format_type(atttypid, NULL) FROM pg_attribute
		WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`, tableIdent(g.Table))
	if err != nil {
		return "", err
	}
	types := map[string]string{}
	var name, typ string
	if _, err := pgx.ForEachRow(rows, []any{&name, &typ}, func() error { types[name] = typ; return nil }); err != nil {
		return "", err
	}
	for _, p := range g.KeyParts() {
		typ, ok := types[p.Column]
		switch {
		case p.Column == "":
		case !ok:
			return fmt.Sprintf("no column %s for the resource name", p.Column), nil
		case !slices.Contains(keyTypes, typ):
			return fmt.Sprintf("key column %s is %s: want text, varchar, smallint, integer or bigint, which read as the gateway writes the key", p.Column, typ), nil
		}
	}
	return "", nil
}

// The pg_trigger.tgtype of the two triggers: ROW|INSERT|DELETE|UPDATE
// (AFTER is the absence of BEFORE), and BEFORE|TRUNCATE for a statement.
const (
	rowTriggerType      = 1 | 4 | 8 | 16
	truncateTriggerType = 2 | 32
)

// checkTable compares g's table's triggers with what Install would make.
func checkTable(ctx context.Context, q querier, g *policy.GuardedTable) (string, error) {
	if problem, err := tableProblem(ctx, q, g); err != nil || problem != "" {
		return problem, err
	}
	rows, err := q.Query(ctx, `SELECT tgname, tgenabled::text, tgtype,
			coalesce(tgfoid = CASE tgname WHEN $2 THEN to_regprocedure('fencegw.guard_row()') ELSE to_regprocedure('fencegw.guard_truncate()') END, false),
			tgqual IS NULL AND cardinality(tgattr::int2[]) = 0 AND tgconstraint = 0, tgargs
		FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname IN ($2, $3) AND NOT tgisinternal`,
		tableIdent(g.Table), rowTrigger, truncateTrigger)
	if err != nil {
		return "", err
	}
	found := map[string]string{} // trigger name -> problem
	var (
		name, enabled       string
		typ                 int16
		ourFunction, always bool
		rawArgs             []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&name, &enabled, &typ, &ourFunction, &always, &rawArgs}, func() error {
		wantType, wantArgs := int16(truncateTriggerType), []string(nil)
		if name == rowTrigger {
			wantType, wantArgs = rowTriggerType, triggerArgs(g)
		}
		switch {
		case enabled != "O" && enabled != "A":
			found[name] = name + " is disabled, or fires only in replica sessions: run fencegw guard install"
		case !ourFunction || typ != wantType || !always:
			found[name] = name + " is not the trigger fencegw installs (function, events, conditions or deferral differ): run fencegw guard install"
		case !slices.Equal(splitArgs(rawArgs), wantArgs):
			found[name] = name + " spells another resource name: run fencegw guard install"
		default:
			found[name] = ""
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	for _, n := range []string{rowTrigger, truncateTrigger} {
		problem, ok := found[n]
		switch {
		case !ok:
			return "no " + n + " trigger: run fencegw guard install", nil
		case problem != "":
			return problem, nil
		}
	}
	return foreignTrigger(ctx, q, g)
}

// foreignTrigger names a trigger on g's table whose function neither the
// table's owner nor a superuser wrote (or one in a session's temporary
// schema). Triggers run with the rights of whoever fires them: a role
// granted TRIGGER on the table could otherwise run its code inside the
// gateway's own transactions, with the gateway's rights, past the guard.
func foreignTrigger(ctx context.Context, q querier, g *policy.GuardedTable) (string, error) {
	var name, fn, owner string
	err := q.QueryRow(ctx, `SELECT t.tgname, t.tgfoid::regprocedure::text, pg_get_userbyid(p.proowner)
		FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid JOIN pg_class c ON c.oid = t.tgrelid
		WHERE t.tgrelid = to_regclass($1) AND NOT t.tgisinternal AND t.tgname NOT IN ($2, $3) AND t.tgenabled <> 'D'
		  AND (p.pronamespace::regnamespace::text LIKE 'pg\_temp\_%'
		       OR (p.proowner <> c.relowner AND NOT (SELECT rolsuper FROM pg_roles WHERE oid = p.proowner)))
		ORDER BY t.tgname LIMIT 1`, tableIdent(g.Table), rowTrigger, truncateTrigger).Scan(&name, &fn, &owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("trigger %s runs %s, written by %s, neither the table's owner nor a superuser: it runs inside the gateway's writes with the gateway's rights; drop it, and grant TRIGGER on guarded tables to no one", name, fn, owner), nil
}

// splitArgs decodes pg_trigger.tgargs: each argument ends with a NUL byte.
func splitArgs(raw []byte) []string {
	if len(raw) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
}

// strayTables lists tables with either of fencegw's triggers that pol does
// not guard.
func strayTables(ctx context.Context, q querier, pol *policy.Policy) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT DISTINCT n.nspname || '.' || c.relname
		FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE t.tgname IN ($1, $2) AND t.tgparentid = 0 ORDER BY 1`, rowTrigger, truncateTrigger)
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	return slices.DeleteFunc(tables, func(t string) bool {
		return slices.ContainsFunc(pol.Guarded, func(g *policy.GuardedTable) bool { return g.Table == t })
	}), nil
}
