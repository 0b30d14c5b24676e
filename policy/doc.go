// Package policy reads the policy file, the one place that says what
// clients may ask of the database: which kinds of resource exist and how
// their fences compare tokens, which operations may be called with which typed
// arguments and which SQL, who the clients are, and which tables the guard
// protects. It compiles the file into the immutable *Policy the gateway
// executes, and knows neither HTTP nor PostgreSQL's wire.
//
// # Loading (file.go, compile.go, words.go, errors.go, yamlerrors.go)
//
// Load and Parse read YAML strictly (unknown keys, two documents and
// duplicate keys are errors) and compile every section; every problem is
// reported at once, each naming its entry (operations.debit.statements[0].sql)
// in an *Error. The file's JSON Schema (policy.schema.json, JSONSchema)
// serves editors and Check (`fencegw policy check`), which reports the
// same problems with the schema's words; a test holds the schema to the
// file's Go structs. The file's words name one thing each (words.go):
// until 0.3.0 the former ones (resources: for kinds:, key: for template:,
// an operation's kind: for access:) are read too, each named once in
// Deprecations, and a file spelling one thing both ways is refused.
//
// # Kinds and their templates (policy.go, template.go)
//
// A resource is one lockable thing, named by a string (account/acct-1); a
// ResourceKind is a kind of them, declared under the file's kinds: a
// Template ("account/{account}") over an operation's arguments, a
// Compare mode (Monotonic: token >= fence; Strict: token > fence), a token
// Validation, a lock-delay, and whether its writes coalesce and
// group-commit, and its permits: a kind with permits: N is a semaphore,
// each name held by up to N leases at once, each fenced under its permit
// slot (permits.go). KindOf finds the kind of a resource. Invariant: the
// client never names the resource of a write; its arguments do, through
// the template, so a holder of account/acct-1 cannot write account/acct-2
// with its token.
//
// # Operations, arguments and SQL (args.go, jsonargs.go, sqlscan.go)
//
// An Operation has Roles (one resource, or named roles of several: a
// transfer's from and to; each a Kind and a Template), typed Args, and 1
// to 16 Statements, each one SQL statement with :name parameters,
// compiled to $n and wrapped so that
// expect_rows is checked inside the database (a check in Go would come
// after an implicit commit). A write's statements run in the transaction
// that advances its fences; a read's (access: read) are SELECTs only, checked
// here. DecodeArgs reads a request body as strictly as the file (each
// argument once, typed, bounded); Resources derives a call's resources
// from its arguments; Bind lays out a statement's parameters:
// arguments, and the builtins :_resource, :_epoch, :_revision and :_token
// of each role. :_token binds E:R, never the signature, a capability. A
// Fingerprint identifies a call's arguments for idempotency keys.
//
// # Clients (clients.go)
//
// Without clients every caller is one client. With them, a caller proves
// who it is and may call only its operations; its name scopes idempotency
// keys, lease limits and token signatures.
//
// # Application errors (sqlerrors.go)
//
// sql_errors map an SQLSTATE a statement raises to a problem of the
// application's choosing (4xx only); the PT class (PT409) maps itself.
// fencegw's own problem types are reserved.
//
// # Guarded tables (guarded.go)
//
// The tables whose rows belong to a resource, and the columns that name
// it, for the guard triggers of package guard.
package policy
