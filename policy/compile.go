package policy

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// Limits on policy entries. They keep one request's work bounded.
const (
	maxStatements          = 16
	maxRoles               = 16
	maxArgs                = 64 // DecodeArgs tracks them in a uint64
	defaultMaxLength       = 256
	maxMaxLength           = 1 << 20
	maxNameLength          = 63
	maxExpectRows    int64 = 1 << 31
	maxLockDelay           = 5 * time.Minute
	minMaxHold             = time.Second
	maxMaxHold             = 7 * 24 * time.Hour
)

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func validName(s string) bool { return len(s) <= maxNameLength && nameRE.MatchString(s) }

func compile(file string, doc *fileDoc) (*Policy, error) {
	var ps problems
	p := &Policy{Source: file, Kinds: map[string]*ResourceKind{}, Operations: map[string]*Operation{}}
	sp, deprecated := settleWords(&ps, doc)
	p.deprecated = deprecated
	for _, name := range sortedKeys(doc.Kinds) {
		if r := compileKind(&ps, sp.kinds+"."+name, sp.template[name], name, doc.Kinds[name]); r != nil {
			p.Kinds[name] = r
		}
	}
	if len(doc.Operations) == 0 {
		ps.add("operations", "no operations: a policy declares at least one")
	}
	for _, name := range sortedKeys(doc.Operations) {
		if op := compileOperation(&ps, p, sp.access[name], name, doc.Operations[name]); op != nil {
			p.Operations[name] = op
		}
	}
	compileLeases(&ps, p, doc.Leases)
	compileClients(&ps, p, doc.Clients, doc.Operations, doc.Leases)
	compileGuarded(&ps, p, doc.Guarded)
	compileSQLErrors(&ps, p, doc.SQLErrors)
	if len(ps) > 0 {
		return nil, &Error{File: file, Problems: ps}
	}
	return p, nil
}

// compileKind compiles the kind name declared at entry, whose template
// the file spells templateWord (words.go).
func compileKind(ps *problems, entry, templateWord, name string, fr fileKind) *ResourceKind {
	r := &ResourceKind{Name: name}
	ok := true
	if !validName(name) {
		ps.add(entry, "kind names are lower-case letters, digits and '_', starting with a letter")
		ok = false
	}
	switch fr.Compare {
	case "", "monotonic":
		r.Compare = Monotonic
	case "strict":
		r.Compare = Strict
	default:
		ps.add(entry+".compare", "%q is not a compare mode: use monotonic or strict", fr.Compare)
		ok = false
	}
	switch fr.Validation {
	case "", "fence":
		r.Validation = tokens.ValidateFence
	case "holder":
		r.Validation = tokens.ValidateHolder
	case "revision":
		r.Validation = tokens.ValidateRevision
	default:
		ps.add(entry+".validation", "%q is not a validation mode: use fence, holder or revision", fr.Validation)
		ok = false
	}
	r.Coalesce = fr.Coalesce == nil || *fr.Coalesce // on unless turned off: BENCHMARKS.md
	r.GroupCommit = fr.GroupCommit
	if r.GroupCommit != nil && *r.GroupCommit && !r.Coalesce {
		ps.add(entry+".group_commit", "group commit needs coalesce: a resource is in at most one transaction in flight only when its writes queue")
		ok = false
	}
	if fr.LockDelay != "" {
		d, err := time.ParseDuration(fr.LockDelay)
		if err != nil || d < 0 || d > maxLockDelay {
			ps.add(entry+".lock_delay", "%q: want a duration from 0s to %s, e.g. 5s", fr.LockDelay, maxLockDelay)
			ok = false
		}
		r.LockDelay = d
	}
	if fr.MaxHold != "" {
		d, err := time.ParseDuration(fr.MaxHold)
		if err != nil || d < minMaxHold || d > maxMaxHold {
			ps.add(entry+".max_hold", "%q: want a duration from %s to %s, e.g. 10m", fr.MaxHold, minMaxHold, maxMaxHold)
		}
		r.MaxHold = d
	}
	if !compilePermits(ps, entry, fr, r) {
		ok = false
	}
	t, err := parseTemplate(fr.Template)
	if err != nil {
		ps.add(entry+"."+templateWord, "%v", err)
		ok = false
	}
	r.Template = t
	if !ok {
		return nil
	}
	return r
}

// compileOperation compiles the operation name, whose access the file
// spells accessWord (words.go).
func compileOperation(ps *problems, p *Policy, accessWord, name string, fo fileOperation) *Operation {
	entry := "operations." + name
	before := len(*ps)
	if !validName(name) {
		ps.add(entry, "operation names are lower-case letters, digits and '_', starting with a letter")
	}
	if name == BatchName {
		ps.add(entry, "%q is reserved: it names POST /v1/batch in metrics and idempotency keys", BatchName)
	}
	op := &Operation{Name: name, argIndex: map[string]int{}}
	switch fo.Access {
	case "", "write":
	case "read":
		op.Read = true
	default:
		ps.add(entry+"."+accessWord, "%q: want write (the default) or read", fo.Access)
	}
	for _, an := range sortedKeys(fo.Args) {
		a, ok := compileArg(ps, entry+".args."+an, an, fo.Args[an])
		if ok {
			op.argIndex[an] = len(op.Args)
			op.Args = append(op.Args, a)
		}
	}
	used := map[string]bool{}
	compileRoles(ps, p, entry, op, fo)
	for _, role := range op.Roles {
		for _, an := range role.Template.args() {
			i, ok := op.argIndex[an]
			switch {
			case !ok:
				ps.add(entry+".args", "the template %q needs argument %q", role.Template, an)
			case op.Args[i].Type == Boolean:
				ps.add(entry+".args."+an, "a boolean cannot be part of a resource name")
			}
			used[an] = true
		}
	}
	if len(op.Args) > maxArgs {
		ps.add(entry+".args", "%d arguments, at most %d", len(op.Args), maxArgs)
	}
	if len(fo.Statements) == 0 || len(fo.Statements) > maxStatements {
		ps.add(entry+".statements", "want 1 to %d statements, have %d", maxStatements, len(fo.Statements))
	}
	for i, fs := range fo.Statements {
		if st, ok := compileStatement(ps, fmt.Sprintf("%s.statements[%d]", entry, i), op, i, fs, used); ok {
			op.Statements = append(op.Statements, st)
		}
	}
	for _, a := range op.Args {
		if !used[a.Name] {
			ps.add(entry+".args."+a.Name, "declared but never used in a template or the SQL")
		}
	}
	if len(*ps) > before {
		return nil
	}
	return op
}

// compileRoles fills op.Roles: the one resource of `resource:`, or the
// named roles of `resources:`, each a template over the operation's
// arguments whose shape names its resource kind.
func compileRoles(ps *problems, p *Policy, entry string, op *Operation, fo fileOperation) {
	switch {
	case fo.Resource != "" && len(fo.Resources) > 0:
		ps.add(entry, "both resource and resources: name one resource, or the roles of several")
	case fo.Resource != "":
		r := p.Kinds[fo.Resource]
		if r == nil {
			ps.add(entry+".resource", "unknown kind %q: declare it under kinds:", fo.Resource)
			return
		}
		op.Roles = []Role{{Kind: r, Template: r.Template}}
	case len(fo.Resources) > maxRoles:
		ps.add(entry+".resources", "%d roles, at most %d", len(fo.Resources), maxRoles)
	case len(fo.Resources) > 0:
		templates := map[string]string{}
		for _, name := range sortedKeys(fo.Resources) {
			rentry := entry + ".resources." + name
			if !validName(name) {
				ps.add(rentry, "role names are lower-case letters, digits and '_', starting with a letter")
				continue
			}
			t, err := parseTemplate(fo.Resources[name])
			if err != nil {
				ps.add(rentry, "%v", err)
				continue
			}
			if other, dup := templates[t.source]; dup {
				ps.add(rentry, "the same template as role %s: two roles of one write must be two resources", other)
				continue
			}
			templates[t.source] = name
			kind := p.kindOf(ps, rentry, t)
			if kind != nil {
				op.Roles = append(op.Roles, Role{Name: name, Kind: kind, Template: t})
			}
		}
	default:
		ps.add(entry+".resource", `missing: name the resource the operation writes under (resource: account), `+
			`or the template of each role (resources: {from: "account/{from}", to: "account/{to}"})`)
	}
}

// kindOf returns the resource whose template has t's shape: the same literals
// in the same places, e.g. account for "account/{from}" when account's template
// is "account/{account}". The kind sets the compare mode, validation and
// coalescing, and its guarded tables cover the role's rows.
func (p *Policy) kindOf(ps *problems, entry string, t *Template) *ResourceKind {
	var found []*ResourceKind
	for _, name := range sortedKeys(p.Kinds) {
		if r := p.Kinds[name]; r.Template.sameShape(t) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		ps.add(entry, "%q has the shape of no kind's template: write it like one (e.g. %q), with this operation's arguments", t, exampleKey(p))
		return nil
	case 1:
		return found[0]
	}
	ps.add(entry, "%q has the shape of the templates of kinds %s and %s: give those kinds templates that differ in their literal text", t, found[0].Name, found[1].Name)
	return nil
}

// exampleKey is a resource name of p to show in a message.
func exampleKey(p *Policy) string {
	for _, name := range sortedKeys(p.Kinds) {
		return p.Kinds[name].Template.String()
	}
	return "account/{account}"
}

func compileArg(ps *problems, entry, name string, fa fileArg) (Arg, bool) {
	before := len(*ps)
	a := Arg{Name: name, MaxLength: defaultMaxLength}
	if !validName(name) {
		ps.add(entry, "argument names are lower-case letters, digits and '_', starting with a letter")
	}
	switch fa.Type {
	case "string":
		a.Type = String
	case "integer":
		a.Type = Integer
	case "boolean":
		a.Type = Boolean
	case "":
		ps.add(entry+".type", "missing: use string, integer or boolean")
	default:
		ps.add(entry+".type", "%q is not a type: use string, integer or boolean", fa.Type)
	}
	if fa.MaxLength != nil || fa.Pattern != "" {
		if a.Type != String {
			ps.add(entry, "max_length and pattern apply to strings only")
		}
	}
	if fa.MaxLength != nil {
		if *fa.MaxLength < 1 || *fa.MaxLength > maxMaxLength {
			ps.add(entry+".max_length", "want 1 to %d", maxMaxLength)
		}
		a.MaxLength = *fa.MaxLength
	}
	if fa.Pattern != "" {
		re, err := regexp.Compile(`^(?:` + fa.Pattern + `)$`)
		if err != nil {
			ps.add(entry+".pattern", "%v", err)
		}
		a.Pattern = re
	}
	if (fa.Min != nil || fa.Max != nil) && a.Type != Integer {
		ps.add(entry, "min and max apply to integers only")
	}
	if fa.Min != nil && fa.Max != nil && *fa.Min > *fa.Max {
		ps.add(entry, "min %d is above max %d", *fa.Min, *fa.Max)
	}
	a.Min, a.Max = fa.Min, fa.Max
	return a, len(*ps) == before
}

func compileStatement(ps *problems, entry string, op *Operation, index int, fs fileStatement, used map[string]bool) (Statement, bool) {
	st := Statement{Source: fs.SQL, ExpectRows: -1}
	sc, err := scanSQL(fs.SQL)
	if err != nil {
		ps.add(entry+".sql", "%v", err)
		return st, false
	}
	ok := true
	for _, name := range sc.params {
		b, err := op.resolve(name)
		if err != nil {
			ps.add(entry+".sql", "parameter :%s %v", name, err)
			ok = false
			continue
		}
		if b.builtin == "" {
			used[name] = true
		}
		st.binds = append(st.binds, b)
	}
	st.params = sc.params
	if op.Read && sc.firstWord != "SELECT" {
		ps.add(entry+".sql", "a read's statements are SELECTs, not %s: a read must not write", sc.firstWord)
		ok = false
	}
	if fs.ExpectRows != nil {
		if *fs.ExpectRows < 0 || *fs.ExpectRows > maxExpectRows {
			ps.add(entry+".expect_rows", "want 0 to %d", maxExpectRows)
			ok = false
		}
		st.ExpectRows = *fs.ExpectRows
	}
	st.Kind, st.SQL, err = wrap(sc, op.Name, index, st.ExpectRows)
	if err != nil {
		ps.add(entry+".sql", "%v", err)
		ok = false
	}
	return st, ok
}

// wrap puts a statement into the form the executor reads. Row expectations
// are checked inside the database by fencegw.expect_rows, which raises and
// so aborts the whole pipelined transaction: checking them in the gateway
// would come too late, after the implicit commit.
func wrap(sc scannedSQL, op string, index int, expect int64) (StatementKind, string, error) {
	returnsRows := sc.firstWord == "SELECT" || sc.returning
	switch sc.firstWord {
	case "INSERT", "UPDATE", "DELETE", "SELECT":
	default:
		return 0, "", fmt.Errorf("statements start with INSERT, UPDATE, DELETE or SELECT, not %s", sc.firstWord)
	}
	count := "count(*)"
	if expect >= 0 {
		// op is a validated name and index an integer: safe to inline.
		count = fmt.Sprintf("fencegw.expect_rows(count(*), %d, '%s', %d)", expect, op, index)
	}
	switch {
	case returnsRows:
		return Rows, "WITH fg_rows AS (" + sc.sql + "\n) SELECT " + count + ", coalesce(json_agg(fg_rows), '[]'::json) FROM fg_rows", nil
	case expect >= 0:
		return Counted, "WITH fg_rows AS (" + sc.sql + "\nRETURNING 1) SELECT " + count + " FROM fg_rows", nil
	}
	return Plain, sc.sql, nil
}

// resolve says what a statement's :name parameter is bound to: an
// argument, or a builtin of one role (:_token, or :_token_from in an
// operation with named roles).
func (op *Operation) resolve(name string) (bind, error) {
	if i, ok := op.argIndex[name]; ok {
		return bind{index: i}, nil
	}
	if len(op.Roles) == 0 || name == "" || name[0] != '_' {
		return bind{}, errors.New("is not a declared argument")
	}
	for _, builtin := range []string{ParamResource, ParamEpoch, ParamRevision, ParamToken} {
		switch {
		case name == builtin && !op.Named():
			return bind{builtin: builtin}, nil
		case name == builtin:
			return bind{}, fmt.Errorf("needs a role: this operation has roles %s, e.g. :%s_%s", op.RoleNames(), builtin, op.Roles[0].Name)
		case op.Named() && strings.HasPrefix(name, builtin+"_"):
			if i, ok := op.Role(name[len(builtin)+1:]); ok {
				return bind{builtin: builtin, index: i}, nil
			}
			return bind{}, fmt.Errorf("names no role: this operation has roles %s", op.RoleNames())
		}
	}
	return bind{}, errors.New("is not a declared argument nor a builtin (:_resource, :_epoch, :_revision, :_token)")
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Describe renders the compiled policy for `fencegw policy check`.
func (p *Policy) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "policy %s: %d kind(s), %d operation(s)\n", p.Source, len(p.Kinds), len(p.Operations))
	for _, name := range sortedKeys(p.Kinds) {
		r := p.Kinds[name]
		group := "the gateway's setting"
		if r.GroupCommit != nil {
			group = fmt.Sprint(*r.GroupCommit)
		}
		fmt.Fprintf(&b, "\nkind %s: template %q, compare %s, validation %s, lock-delay %s, max hold %s, coalesce %t, group commit %s%s\n", r.Name, r.Template, r.Compare, r.Validation, r.LockDelay, maxHoldText(r.MaxHold), r.Coalesce, group, permitsText(r.Permits))
	}
	for _, name := range sortedKeys(p.Operations) {
		op := p.Operations[name]
		if op.Named() {
			roles := make([]string, len(op.Roles))
			for i, r := range op.Roles {
				roles[i] = fmt.Sprintf("%s %q (%s)", r.Name, r.Template, r.Kind.Name)
			}
			fmt.Fprintf(&b, "\noperation %s on roles %s\n", op.Name, strings.Join(roles, ", "))
		} else {
			fmt.Fprintf(&b, "\noperation %s on %s\n", op.Name, op.Roles[0].Kind.Name)
		}
		for _, a := range op.Args {
			fmt.Fprintf(&b, "  arg %s: %s\n", a.Name, a.Type)
		}
		for i, st := range op.Statements {
			fmt.Fprintf(&b, "  statement %d (params %s):\n    %s\n", i, strings.Join(st.params, ", "), strings.ReplaceAll(st.SQL, "\n", "\n    "))
		}
	}
	for _, l := range p.lockOnly {
		fmt.Fprintf(&b, "\nlock-only lease %s: key %q\n", l.name, l.key)
	}
	p.describeGuarded(&b)
	b.WriteString(p.describeSQLErrors())
	if !p.AuthRequired() {
		b.WriteString("\nno clients: authentication is off, any caller may call any operation\n")
	}
	for _, c := range p.clientsByName() {
		ops := "*"
		if !c.any {
			ops = cmp.Or(strings.Join(sortedKeys(c.operations), ", "), "no operation")
		}
		fmt.Fprintf(&b, "\nclient %s (%s) may call: %s\n", c.Name, c.proves(), ops)
		if leases := c.leaseNames(); leases != "" {
			fmt.Fprintf(&b, "client %s may also lease: %s\n", c.Name, leases)
		}
		b.WriteString(c.sqlText())
	}
	return b.String()
}

func maxHoldText(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return d.String()
}
