package policy

import (
	"regexp"
	"strings"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// Compare is how a resource's fence compares a new token with the highest
// accepted one.
type Compare int

const (
	// Monotonic accepts token >= fence: a holder may write many times
	// during its lease; any older holder is refused.
	Monotonic Compare = iota
	// Strict accepts token > fence: every token writes once; retries must
	// use an Idempotency-Key.
	Strict
)

func (c Compare) String() string {
	if c == Strict {
		return "strict"
	}
	return "monotonic"
}

// Policy is a compiled policy file. It is immutable and safe for concurrent
// use.
type Policy struct {
	Source     string
	Kinds      map[string]*ResourceKind // by name, as declared under kinds:
	Operations map[string]*Operation
	Guarded    []*GuardedTable // sorted by table
	clients    clientIndex     // by name, token, certificate, JWT
	writers    []writer        // what lease names operations write (leases.go)
	lockOnly   []lockOnly      // leases:, sorted by name
	sqlErrors  map[string]SQLErrorMapping
	deprecated []string // the former words the file uses (words.go)
	digest     [32]byte // SHA-256 of the file
}

// ResourceKind is a kind of lockable thing and how its fence compares tokens.
type ResourceKind struct {
	Name       string
	Template   *Template
	Compare    Compare
	Validation tokens.Validation
	LockDelay  time.Duration // after an expired (not released) lease
	// MaxHold bounds how long one lease may hold the lock, renewals and
	// all: a keepalive past it is refused and the lease revoked, so a
	// holder wedged while its sidecar renews is cut off. 0: no bound.
	MaxHold time.Duration
	// Permits makes each name of the kind a semaphore: up to Permits
	// holders at once, each holding one slot (1 to Permits) with a lock
	// and a fence of its own (tokens.PermitResource). 0: an exclusive
	// lock, one holder.
	Permits int
	// Coalesce queues writes that arrive while one is in flight and runs
	// them together under one commit: tried whole first, each in its own
	// savepoint only once one has failed (fence/several.go). On by
	// default: a lone write runs as if it were off.
	Coalesce bool
	// GroupCommit commits the writes of this resource that wait for a
	// connection together with other resources' (fence.Config.GroupCommit);
	// nil: as the gateway is configured.
	GroupCommit *bool
}

// Operation is a named, parameterised write that clients may call, or a
// read: SELECTs run under the fence without advancing it.
type Operation struct {
	Name string
	// Read: the operation's statements only read (SELECT), in a read-only
	// transaction that checks its tokens against the fences and leaves them
	// as they are (POST /v1/reads/{operation}).
	Read bool
	// Roles are the resources the operation is fenced on, one token each:
	// one role named "" for an operation that names one resource, or the
	// named roles of a multi-resource operation (e.g. a transfer's from
	// and to), sorted by name.
	Roles      []Role
	Args       []Arg // sorted by name
	Statements []Statement
	argIndex   map[string]int
	sqlErrors  map[string]SQLErrorMapping // the policy's
}

// Role is one resource an operation writes under, and how its key is
// derived from the operation's arguments.
type Role struct {
	Name     string        // "" for an operation of one resource
	Kind     *ResourceKind // the kind: compare mode, validation, coalescing
	Template *Template     // over the operation's arguments
}

// Named reports whether the operation's roles have names: a request then
// carries one token per role.
func (op *Operation) Named() bool { return op.Roles[0].Name != "" }

// Role returns the index of the named role, or false.
func (op *Operation) Role(name string) (int, bool) {
	for i := range op.Roles {
		if op.Roles[i].Name == name {
			return i, true
		}
	}
	return 0, false
}

// RoleNames lists the roles' names, comma-separated, for messages.
func (op *Operation) RoleNames() string {
	names := make([]string, len(op.Roles))
	for i := range op.Roles {
		names[i] = op.Roles[i].Name
	}
	return strings.Join(names, ", ")
}

// ArgType is the JSON type an argument must have.
type ArgType int

const (
	String ArgType = iota
	Integer
	Boolean
)

func (t ArgType) String() string {
	switch t {
	case Integer:
		return "integer"
	case Boolean:
		return "boolean"
	}
	return "string"
}

// Arg is one declared argument with its constraints.
type Arg struct {
	Name      string
	Type      ArgType
	MaxLength int            // strings, in bytes
	Pattern   *regexp.Regexp // strings; anchored
	Min, Max  *int64         // integers
}

// StatementKind is how the executor reads a statement's result.
type StatementKind int

const (
	// Plain statements run as written; rows affected come from the command tag.
	Plain StatementKind = iota
	// Counted statements return one row: the affected count, checked
	// against expect_rows inside the database.
	Counted
	// Rows statements return one row: the count and the rows as a JSON array.
	Rows
)

// Builtin parameters every statement may use. Argument names cannot start
// with '_', so these never collide. An operation with named roles suffixes
// them with the role: :_resource_from, :_token_to.
const (
	ParamResource = "_resource" // the resource name
	ParamEpoch    = "_epoch"    // the token's epoch
	ParamRevision = "_revision" // the token's revision
	ParamToken    = "_token"    // the token's text form E:R, never its signature
)

// Statement is one compiled SQL statement of an operation.
type Statement struct {
	Source     string // as written in the policy
	SQL        string // what is sent: $n placeholders, wrapped per Kind
	Kind       StatementKind
	ExpectRows int64 // -1 when not set
	params     []string
	binds      []bind // what goes to $1, $2, ...
}

// bind is one parameter: an argument, or a builtin of one role.
type bind struct {
	builtin string // "" for an argument; else ParamResource, ...
	index   int    // the argument's index in Operation.Args, or the role's
}

// Params lists the names bound to $1, $2, ... of SQL.
func (s *Statement) Params() []string { return s.params }

// OperationNames returns the operation names in sorted order.
func (p *Policy) OperationNames() []string { return sortedKeys(p.Operations) }

// KindOf returns the policy's kind whose template matches a lease's
// resource name, e.g. "account" for "account/acct-1"; nil if none.
// Templates are tried in name order; the first match wins. A permit slot
// of a semaphore ("pool/p1#2") is of its semaphore's kind, whatever its
// name happens to match.
func (p *Policy) KindOf(key string) *ResourceKind {
	if _, _, r := p.slotOf(key); r != nil {
		return r
	}
	return p.templateKind(key)
}

// templateKind is KindOf of a name read as it is, no permit slot.
func (p *Policy) templateKind(key string) *ResourceKind {
	for _, name := range sortedKeys(p.Kinds) {
		if r := p.Kinds[name]; r.Template.match(key) {
			return r
		}
	}
	return nil
}
