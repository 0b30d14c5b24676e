// Package guard puts fencegw's guard triggers on the tables a policy lists
// (policy.GuardedTable), checks them and takes them off. The trigger
// functions themselves come with the gateway's schema (migration 0003): a
// guarded row may be written only inside a gateway write fenced on the
// row's resource, or after SELECT fencegw.bypass('why') in the same
// transaction, which is logged in fencegw.bypass_log.
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
	RowTrigger      = "fencegw_guard"
	TruncateTrigger = "fencegw_guard_truncate"
)

// ErrNotGuarded is wrapped by Check's error when a table the policy lists
// lacks its triggers, or has them with other arguments.
var ErrNotGuarded = errors.New("guard: not guarded as the policy says")

// Status is one guarded table as the database has it.
type Status struct {
	Table   string
	Problem string // "" when the triggers are as the policy says
}

// Install puts the triggers on every table pol guards, replacing any
// earlier version, all in one transaction: every table or none. It refuses
// a table that does not exist or lacks a key column, since a trigger
// reading a missing column would refuse every write.
func Install(ctx context.Context, conn *pgx.Conn, pol *policy.Policy) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, g := range pol.Guarded {
			if problem, err := missingColumns(ctx, tx, g); err != nil || problem != "" {
				return errors.Join(err, fmt.Errorf("guard: %s: %s", g.Table, problem))
			}
			if _, err := tx.Exec(ctx, rowTriggerDDL(g)); err != nil {
				return fmt.Errorf("guard: %s: %w", g.Table, err)
			}
			if _, err := tx.Exec(ctx, truncateTriggerDDL(g)); err != nil {
				return fmt.Errorf("guard: %s: %w", g.Table, err)
			}
		}
		return nil
	})
}

// Remove takes fencegw's triggers off every table pol guards, in one
// transaction. Tables without them are left alone.
func Remove(ctx context.Context, conn *pgx.Conn, pol *policy.Policy) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, g := range pol.Guarded {
			for _, name := range []string{RowTrigger, TruncateTrigger} {
				ddl := fmt.Sprintf("DROP TRIGGER IF EXISTS %s ON %s", name, tableIdent(g.Table))
				if _, err := tx.Exec(ctx, ddl); err != nil {
					return fmt.Errorf("guard: %s: %w", g.Table, err)
				}
			}
		}
		return nil
	})
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
		out = append(out, Status{Table: t, Problem: "not in the policy"})
	}
	if bad > 0 {
		return out, fmt.Errorf("%w: %d of %d table(s)", ErrNotGuarded, bad, len(pol.Guarded))
	}
	return out, nil
}

// TriggerArgs spells g's key for the row trigger: "L" + a literal, "C" + a
// column (see fencegw.guard_row).
func TriggerArgs(g *policy.GuardedTable) []string {
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

func rowTriggerDDL(g *policy.GuardedTable) string {
	quoted := make([]string, 0, len(g.KeyParts()))
	for _, a := range TriggerArgs(g) {
		quoted = append(quoted, quoteLiteral(a))
	}
	return fmt.Sprintf("CREATE OR REPLACE TRIGGER %s BEFORE INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION fencegw.guard_row(%s)",
		RowTrigger, tableIdent(g.Table), strings.Join(quoted, ", "))
}

func truncateTriggerDDL(g *policy.GuardedTable) string {
	return fmt.Sprintf("CREATE OR REPLACE TRIGGER %s BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION fencegw.guard_truncate()",
		TruncateTrigger, tableIdent(g.Table))
}

// tableIdent quotes schema.table; the policy allows only plain lower-case
// names, so quoting changes nothing but is never skipped.
func tableIdent(table string) string {
	return pgx.Identifier(strings.SplitN(table, ".", 2)).Sanitize()
}

// quoteLiteral quotes s as a standard SQL string literal. Key template
// literals cannot hold NUL (PostgreSQL text cannot), and with
// standard_conforming_strings on (the default since 9.1) a backslash is an
// ordinary character; an E-prefixed literal makes that so whatever the
// setting.
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

// missingColumns says which of g's key columns its table lacks, or that
// the table does not exist.
func missingColumns(ctx context.Context, q querier, g *policy.GuardedTable) (string, error) {
	rows, err := q.Query(ctx, `SELECT attname FROM pg_attribute
		WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`, tableIdent(g.Table))
	if err != nil {
		return "", err
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	if len(have) == 0 {
		return "no such table", nil
	}
	var missing []string
	for _, p := range g.KeyParts() {
		if p.Column != "" && !slices.Contains(have, p.Column) {
			missing = append(missing, p.Column)
		}
	}
	if len(missing) > 0 {
		return "no column " + strings.Join(missing, ", ") + " for the resource key", nil
	}
	return "", nil
}

// checkTable compares g's table's triggers with what Install would make.
func checkTable(ctx context.Context, q querier, g *policy.GuardedTable) (string, error) {
	if problem, err := missingColumns(ctx, q, g); err != nil || problem != "" {
		return problem, err
	}
	rows, err := q.Query(ctx, `SELECT tgname, tgenabled, tgfoid::regproc::text, tgargs
		FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = ANY($2) AND NOT tgisinternal`,
		tableIdent(g.Table), []string{RowTrigger, TruncateTrigger})
	if err != nil {
		return "", err
	}
	found := map[string]string{} // trigger name -> problem
	var name, enabled, function string
	var rawArgs []byte
	_, err = pgx.ForEachRow(rows, []any{&name, &enabled, &function, &rawArgs}, func() error {
		want, wantArgs := "fencegw.guard_truncate", []string(nil)
		if name == RowTrigger {
			want, wantArgs = "fencegw.guard_row", TriggerArgs(g)
		}
		switch {
		case enabled == "D":
			found[name] = name + " is disabled"
		case function != want:
			found[name] = fmt.Sprintf("%s calls %s, not %s", name, function, want)
		case !slices.Equal(splitArgs(rawArgs), wantArgs):
			found[name] = name + " spells another resource key: run fencegw guard install"
		default:
			found[name] = ""
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	for _, n := range []string{RowTrigger, TruncateTrigger} {
		problem, ok := found[n]
		switch {
		case !ok:
			return "no " + n + " trigger: run fencegw guard install", nil
		case problem != "":
			return problem, nil
		}
	}
	return "", nil
}

// splitArgs decodes pg_trigger.tgargs: each argument ends with a NUL byte.
func splitArgs(raw []byte) []string {
	if len(raw) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
}

// strayTables lists tables with fencegw's row trigger that pol does not
// guard.
func strayTables(ctx context.Context, q querier, pol *policy.Policy) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT n.nspname || '.' || c.relname
		FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE t.tgname = $1 ORDER BY 1`, RowTrigger)
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
