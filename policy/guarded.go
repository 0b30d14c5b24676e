package policy

import (
	"regexp"
	"slices"
	"strings"
)

// GuardedTable is a table whose rows belong to resources: once `fencegw
// guard install` has put triggers on it, PostgreSQL refuses a write to one
// of its rows unless the transaction is a gateway write fenced on that
// row's resource, or declared an audited bypass.
type GuardedTable struct {
	Table string // schema-qualified, e.g. demo.accounts
	Kind  *ResourceKind
	// Columns maps each argument of the resource's template to the
	// column that holds its value in a row.
	Columns map[string]string
}

// KeyPart is one piece of a row's resource name: a literal, or the value of
// a column.
type KeyPart struct {
	Literal string
	Column  string // when non-empty, the part is this column's value
}

// KeyParts spells the row's resource name: the resource's template with
// its arguments replaced by the columns that hold them.
func (g *GuardedTable) KeyParts() []KeyPart {
	parts := make([]KeyPart, len(g.Kind.Template.parts))
	for i, p := range g.Kind.Template.parts {
		if p.arg == "" {
			parts[i] = KeyPart{Literal: p.literal}
		} else {
			parts[i] = KeyPart{Column: g.Columns[p.arg]}
		}
	}
	return parts
}

type fileGuarded struct {
	Resource string            `yaml:"resource"`
	Columns  map[string]string `yaml:"columns"`
}

// Lower-case unquoted identifiers only: the names go into DDL, and quoting
// rules are where mistakes hide.
var (
	tableRE  = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}\.[a-z_][a-z0-9_]{0,62}$`)
	columnRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)
)

func compileGuarded(ps *problems, p *Policy, tables map[string]fileGuarded) {
	for _, table := range sortedKeys(tables) {
		fg, entry := tables[table], "guarded_tables."+table
		ok := true
		schema, _, _ := strings.Cut(table, ".")
		switch {
		case !tableRE.MatchString(table):
			ps.add(entry, "want schema.table in lower-case letters, digits and '_', e.g. demo.accounts")
			ok = false
		case schema == "fencegw" || schema == "pg_catalog" || schema == "information_schema":
			ps.add(entry, "the %s schema is not an application's to guard", schema)
			ok = false
		}
		r := p.Kinds[fg.Resource]
		if r == nil {
			ps.add(entry+".resource", "%q is not a declared kind", fg.Resource)
			continue
		}
		if r.Permits > 0 {
			ps.add(entry+".resource", "%s is a semaphore (permits: %d): its writes are fenced under their permit slot, which no row names, so the guard would refuse them all", r.Name, r.Permits)
			continue
		}
		args := r.Template.args()
		for _, arg := range args {
			col, found := fg.Columns[arg]
			switch {
			case !found:
				ps.add(entry+".columns", "no column for {%s} of %s's template %q", arg, r.Name, r.Template)
				ok = false
			case !columnRE.MatchString(col):
				ps.add(entry+".columns."+arg, "%q: want a column name in lower-case letters, digits and '_'", col)
				ok = false
			}
		}
		for _, arg := range sortedKeys(fg.Columns) {
			if !slices.Contains(args, arg) {
				ps.add(entry+".columns."+arg, "%s's template %q has no {%s}", r.Name, r.Template, arg)
				ok = false
			}
		}
		if ok {
			p.Guarded = append(p.Guarded, &GuardedTable{Table: table, Kind: r, Columns: fg.Columns})
		}
	}
}

// describeGuarded renders the guarded tables for Describe.
func (p *Policy) describeGuarded(b *strings.Builder) {
	for _, g := range p.Guarded {
		b.WriteString("\nguarded table " + g.Table + ": rows of " + g.Kind.Name + ", key ")
		for _, part := range g.KeyParts() {
			if part.Column != "" {
				b.WriteString("{" + part.Column + "}")
			} else {
				b.WriteString(part.Literal)
			}
		}
		b.WriteString("\n")
	}
}
