package guard

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/policy"
)

// gatewayTables are the privileges the gateway's role needs on its own
// schema. The fences and the fence floor it only reads: it changes them
// through gatewayFunctions alone, which cannot lower them. The audit and
// the lock history it may only add to (the audit's id and time are the
// table's), and trims through gatewayFunctions, which keep what their
// retention keeps. The authority record, the idempotency keys (written,
// read, expired by the janitor), the replicas' policy check, the
// history's cursor, the SQL front's sessions (registered and deleted)
// and its transaction keys (expired by the janitor) it keeps itself; the bypass log it reads for inspect.
// The other functions the gateway calls run with its rights and are
// executable by everyone; fencegw.bypass and fencegw.stamp_unfenced are
// not, and the gateway's role must not get them.
var gatewayTables = []struct{ table, privileges string }{
	{"fencegw.fences", "SELECT"},
	{"fencegw.fence_floor", "SELECT"},
	{"fencegw.authority", "SELECT, INSERT, UPDATE"},
	{"fencegw.rejections", "SELECT, INSERT (resource, operation, reason, presented, current, client, request_id, remote_addr, suppressed)"},
	{"fencegw.idempotency_keys", "SELECT, INSERT, UPDATE, DELETE"},
	{"fencegw.replicas", "SELECT, INSERT, UPDATE, DELETE"},
	{"fencegw.bypass_log", "SELECT"},
	{"fencegw.lock_history", "SELECT, INSERT (at, resource, event, lease_id, client, token, actor, reason)"},
	{"fencegw.history_cursor", "SELECT, INSERT, UPDATE, DELETE"},
	{"fencegw.front_sessions", "SELECT, INSERT, UPDATE, DELETE"},
	{"fencegw.transaction_keys", "SELECT, DELETE"},
}

// gatewayFunctions are the functions that change the fences, the floor,
// the audit and the history for the gateway's role: each runs with its
// owner's rights, cannot lower a fence or the floor nor delete what its
// retention keeps (fence/sql), and is executable only by the roles
// granted it. fence is the mark the guard trusts: no other role may have
// it.
var gatewayFunctions = []string{
	"fencegw.fence(text, bigint, bigint, boolean, boolean)",
	"fencegw.advance_fence(text, bigint, bigint, boolean)",
	"fencegw.raise_fence_floor(bigint, bigint, text)",
	"fencegw.prune_fences(text, integer)",
	"fencegw.trim_rejections()",
	"fencegw.trim_history()",
}

// tableUse is what a policy's statements do to one table.
type tableUse struct {
	schema, name string
	privileges   map[string]bool // SELECT, INSERT, UPDATE, DELETE
	sequences    []relation      // the sequences its column defaults draw from, for INSERT
}

// relation is a schema-qualified name, kept in its parts: quoting them
// one by one is the only safe way to print it.
type relation struct{ schema, name string }

// Grants returns the SQL that gives role exactly what `fencegw serve` needs
// to run pol on the database conn is connected to, and nothing else: the
// gateway's schema, the recorded schema version, and on each application
// table what the policy's statements do to it, as PostgreSQL plans them
// (a generic plan of each statement: every table it reads, writes or
// draws a sequence for). Roles are not created, and nothing is run.
func Grants(ctx context.Context, conn *pgx.Conn, pol *policy.Policy, role, versionTable string) (string, error) {
	tables, used, err := applicationTables(ctx, conn, pol)
	if err != nil {
		return "", err
	}
	// The gateway's own tables get gatewayTables' privileges and no more:
	// a statement that writes one would be granted a way around the
	// functions that keep the fence moving forward.
	for t, use := range tables {
		if use.schema != "fencegw" {
			continue
		}
		for p := range use.privileges {
			if p != "SELECT" {
				return "", fmt.Errorf("guard: grants: a statement of policy %s writes %s (%s), the gateway's own table: no policy may", pol.Source, t, p)
			}
		}
		delete(tables, t)
	}
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		return "", fmt.Errorf("guard: grants: %w", err)
	}
	r := pgx.Identifier{role}.Sanitize()
	var b strings.Builder
	// Quoted: a name with a line break would otherwise end the comment
	// and put its rest on a line of its own, which psql would run.
	fmt.Fprintf(&b, "-- What fencegw serve needs for policy %s, as role %s; nothing else.\n", strconv.Quote(pol.Source), strconv.Quote(role))
	fmt.Fprintf(&b, "GRANT CONNECT ON DATABASE %s TO %s;\n", pgx.Identifier{db}.Sanitize(), r)
	fmt.Fprintf(&b, "GRANT USAGE ON SCHEMA fencegw TO %s;\n", r)
	for _, t := range gatewayTables {
		fmt.Fprintf(&b, "GRANT %s ON %s TO %s;\n", t.privileges, t.table, r)
	}
	for _, f := range gatewayFunctions {
		fmt.Fprintf(&b, "GRANT EXECUTE ON FUNCTION %s TO %s;\n", f, r)
	}
	fmt.Fprintf(&b, "GRANT USAGE ON SEQUENCE fencegw.rejections_id_seq TO %s;\n", r)
	fmt.Fprintf(&b, "GRANT USAGE ON SEQUENCE fencegw.lock_history_id_seq TO %s;\n", r)
	fmt.Fprintf(&b, "GRANT SELECT ON %s TO %s;\n", pgx.Identifier{"public", versionTable}.Sanitize(), r)
	schemas := used // of the functions and types the statements use
	for _, use := range tables {
		schemas[use.schema] = true
	}
	for _, s := range slices.Sorted(maps.Keys(schemas)) {
		fmt.Fprintf(&b, "GRANT USAGE ON SCHEMA %s TO %s;\n", pgx.Identifier{s}.Sanitize(), r)
	}
	for _, t := range slices.Sorted(maps.Keys(tables)) {
		use := tables[t]
		privs := slices.SortedFunc(maps.Keys(use.privileges), func(a, b string) int {
			return cmp.Compare(slices.Index(privilegeOrder, a), slices.Index(privilegeOrder, b))
		})
		fmt.Fprintf(&b, "GRANT %s ON %s TO %s;\n", strings.Join(privs, ", "), t, r)
		for _, s := range use.sequences {
			fmt.Fprintf(&b, "GRANT USAGE ON SEQUENCE %s TO %s;\n", pgx.Identifier{s.schema, s.name}.Sanitize(), r)
		}
	}
	return b.String(), nil
}

var privilegeOrder = []string{"SELECT", "INSERT", "UPDATE", "DELETE"}

// applicationTables plans every statement of pol generically and collects
// the tables the plans touch, with what they do to each, keyed by
// schema-qualified, quoted name.
func applicationTables(ctx context.Context, conn *pgx.Conn, pol *policy.Policy) (map[string]*tableUse, map[string]bool, error) {
	tables := map[string]*tableUse{}
	named := map[string]bool{} // schema names seen qualifying a function or type
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// A generic plan keeps every table the statement names: with the
		// parameters' values (NULLs here) the planner could prove parts
		// of it empty and leave their tables out.
		if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
			return err
		}
		for _, name := range pol.OperationNames() {
			for i, st := range pol.Operations[name].Statements {
				entry := fmt.Sprintf("operations.%s.statements[%d]", name, i)
				// The text too: PostgreSQL inlines simple SQL functions, and
				// their names are gone from the plan, but calling one still
				// needs USAGE on its schema.
				collectSchemas(st.SQL, named)
				if err := planTables(ctx, tx, st.SQL, tables, named); err != nil {
					return fmt.Errorf("%s: %w", entry, err)
				}
			}
		}
		for t, use := range tables {
			if !use.privileges["INSERT"] {
				continue
			}
			rows, err := tx.Query(ctx, `SELECT DISTINCT n.nspname, c.relname FROM pg_depend d
				JOIN pg_class c ON c.oid = d.objid AND d.classid = 'pg_class'::regclass
				JOIN pg_namespace n ON n.oid = c.relnamespace
				WHERE d.refobjid = $1::regclass AND d.refclassid = 'pg_class'::regclass AND c.relkind = 'S'
				ORDER BY 1, 2`, t)
			if err != nil {
				return err
			}
			if use.sequences, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (relation, error) {
				var rel relation
				return rel, r.Scan(&rel.schema, &rel.name)
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("guard: grants: %w", err)
	}
	schemas, err := realSchemas(ctx, conn, named)
	if err != nil {
		return nil, nil, fmt.Errorf("guard: grants: %w", err)
	}
	return tables, schemas, nil
}

// qualified finds schema-qualified function calls and casts in a plan's
// expressions: fnonly.f($1), $1::app.money.
var qualified = regexp.MustCompile(`(?:^|[^A-Za-z0-9_."])"?([a-z_][a-z0-9_$]*)"?\."?[a-z_][a-z0-9_$]*"?\(|::"?([a-z_][a-z0-9_$]*)"?\.`)

// collectSchemas adds to named every schema that qualifies a function or
// a type in the plan's text (EXPLAIN VERBOSE qualifies what the search
// path does not find): a statement calling fnonly.f() needs USAGE on
// fnonly though it touches no table there.
func collectSchemas(v any, named map[string]bool) {
	switch v := v.(type) {
	case string:
		for _, m := range qualified.FindAllStringSubmatch(v, -1) {
			named[m[1]+m[2]] = true
		}
	case []any:
		for _, e := range v {
			collectSchemas(e, named)
		}
	case map[string]any:
		for _, e := range v {
			collectSchemas(e, named)
		}
	}
}

// realSchemas keeps the names that are schemas of the database other than
// the system's and the gateway's own (granted above).
func realSchemas(ctx context.Context, conn *pgx.Conn, named map[string]bool) (map[string]bool, error) {
	out := map[string]bool{}
	if len(named) == 0 {
		return out, nil
	}
	rows, err := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname = ANY($1)
		AND nspname NOT IN ('pg_catalog', 'information_schema', 'fencegw')`, slices.Collect(maps.Keys(named)))
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	for _, n := range names {
		out[n] = true
	}
	return out, err
}

// planNode is the part of EXPLAIN (FORMAT JSON, VERBOSE) grants read.
type planNode struct {
	NodeType  string     `json:"Node Type"`
	Operation string     `json:"Operation"` // ModifyTable: Insert, Update, Delete
	Relation  string     `json:"Relation Name"`
	Schema    string     `json:"Schema"`
	Conflict  string     `json:"Conflict Resolution"` // ON CONFLICT DO UPDATE: "UPDATE"
	Output    []string   `json:"Output"`              // a ModifyTable's RETURNING list
	Plans     []planNode `json:"Plans"`
}

// planTables adds the tables the generic plan of sql touches to tables,
// and the schemas its functions and types are in to named.
func planTables(ctx context.Context, tx pgx.Tx, sql string, tables map[string]*tableUse, named map[string]bool) error {
	sd, err := tx.Conn().Prepare(ctx, "fencegw_grants", sql)
	if err != nil {
		return err
	}
	defer tx.Conn().Deallocate(ctx, "fencegw_grants")
	nulls := strings.TrimSuffix(strings.Repeat("NULL, ", len(sd.ParamOIDs)), ", ")
	explain := "EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE fencegw_grants"
	if nulls != "" {
		explain += "(" + nulls + ")"
	}
	var out []struct {
		Plan planNode `json:"Plan"`
	}
	var raw []byte
	if err := tx.QueryRow(ctx, explain).Scan(&raw); err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out) == 0 {
		return fmt.Errorf("reading the plan: %v", err)
	}
	walkPlan(&out[0].Plan, tables)
	var generic any
	_ = json.Unmarshal(raw, &generic) // read above already
	collectSchemas(generic, named)
	return nil
}

func walkPlan(n *planNode, tables map[string]*tableUse) {
	if n.Relation != "" {
		t := pgx.Identifier{n.Schema, n.Relation}.Sanitize()
		use := tables[t]
		if use == nil {
			use = &tableUse{schema: n.Schema, name: n.Relation, privileges: map[string]bool{}}
			tables[t] = use
		}
		switch n.Operation {
		case "Insert", "Update", "Delete":
			use.privileges[strings.ToUpper(n.Operation)] = true
			if n.Conflict == "UPDATE" {
				use.privileges["UPDATE"] = true
			}
			// RETURNING reads the rows; UPDATE and DELETE read them to
			// find them (the scan under this node says so too); ON
			// CONFLICT reads the conflicting row.
			if len(n.Output) > 0 || n.Operation != "Insert" || n.Conflict != "" {
				use.privileges["SELECT"] = true
			}
		default:
			use.privileges["SELECT"] = true
		}
	}
	for i := range n.Plans {
		walkPlan(&n.Plans[i], tables)
	}
}
