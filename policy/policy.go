package policy

import (
	"regexp"
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
	Resources  map[string]*Resource
	Operations map[string]*Operation
	Guarded    []*GuardedTable      // sorted by table
	clients    map[[32]byte]*Client // by SHA-256 of the bearer token
}

// Resource is a kind of lockable thing and how its fence compares tokens.
type Resource struct {
	Name       string
	Key        *Template
	Compare    Compare
	Validation tokens.Validation
	LockDelay  time.Duration // after an expired (not released) lease
	// Coalesce queues writes that arrive while one is in flight and runs
	// them together, each in its own savepoint, under one commit. On by
	// default: a lone write runs as if it were off.
	Coalesce bool
}

// Operation is a named, parameterised write that clients may call.
type Operation struct {
	Name       string
	Resource   *Resource
	Args       []Arg // sorted by name
	Statements []Statement
	argIndex   map[string]int
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
// with '_', so these never collide.
const (
	ParamResource = "_resource" // the resource key
	ParamEpoch    = "_epoch"    // the token's epoch
	ParamRevision = "_revision" // the token's revision
	ParamToken    = "_token"    // the token's text form E:R
)

// Statement is one compiled SQL statement of an operation.
type Statement struct {
	Source     string // as written in the policy
	SQL        string // what is sent: $n placeholders, wrapped per Kind
	Kind       StatementKind
	ExpectRows int64 // -1 when not set
	params     []string
}

// Params lists the names bound to $1, $2, ... of SQL.
func (s *Statement) Params() []string { return s.params }

// OperationNames returns the operation names in sorted order.
func (p *Policy) OperationNames() []string { return sortedKeys(p.Operations) }

// ResourceFor returns the policy resource whose key template matches a
// lease's resource name, e.g. "account" for "account/acct-1"; nil if none.
// Templates are tried in name order; the first match wins.
func (p *Policy) ResourceFor(key string) *Resource {
	for _, name := range sortedKeys(p.Resources) {
		if r := p.Resources[name]; r.Key.match(key) {
			return r
		}
	}
	return nil
}
