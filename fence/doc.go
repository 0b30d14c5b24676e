// Package fence is fencegw's fenced transaction: the only code that runs
// statements on the gateway's schema (fencegw.*), and the one place where
// a write becomes a PostgreSQL transaction. It knows SQL, not HTTP: it
// returns typed errors, and the gateway renders them (problem documents,
// statuses). One part of the wire is this package's: an applied
// request's answer, the API's JSON, rendered here (answer.go) because a
// keyed request's answer is stored in the same transaction as its writes
// and replayed byte for byte. A refusal stored as a key's outcome is the
// gateway's rendering, kept here as an opaque Response.
//
// # The path of a write
//
// A write meets these files in this order. Each holds one stage of its
// path, and the functions that only that stage uses:
//
//   - store.go: Apply, the entry. A request of one coalescing resource goes
//     to the coalescer; any other runs on a connection of its own.
//   - coalesce.go, committer.go, groupcommit.go: coalescing, the
//     committer's lanes, and which writes share a transaction.
//   - lone.go: an unkeyed request alone, one implicit transaction.
//   - tx.go: an explicit transaction, a keyed request's or several's.
//   - several.go: a transaction of several requests, tried whole first.
//   - pipeline.go, prepared.go, commitwarning.go: a request's statements,
//     sent and read back, and the warnings heard while it commits.
//   - classify.go: what an error means for a request.
//   - answer.go: the answer of an applied request.
//   - idempotency.go: a key's claim, its stored answer, replay and
//     settlement.
//
// Every stage hands its statements to the one pipeline, its errors to the
// one classification and its results to the one answer, and a
// transaction whose requests cannot share it falls back to lone writes.
//
// # Requests, writes and fences (request.go)
//
// A Request is what one client call asks for: one Write, or an atomic
// batch of them. A Write is one call of a policy operation with its
// arguments, and for each of the operation's roles a resource name and the
// token presented for it. NewRequest collects every write's fences, one
// per resource, in canonical order (by key), and refuses contradictions:
// two roles of one write on one resource, or one resource under two tokens
// in one request (ErrConflict).
//
// # The fence comparison (sql/fence.sql)
//
// A fence is ONE conditional statement, fencegw.fence (sql/fence.sql): an
// upsert of the resource's fence row that succeeds only if the token is
// not older than the fence (strictly newer on a strict resource) and
// otherwise raises SQLSTATE FG409, which aborts the transaction. Fences
// are advanced first, in canonical order, so two requests never lock each
// other's fence rows in opposite orders: transfers in opposite directions
// cannot deadlock on fences. The statement's row lock serialises writers
// of one resource; writers of different resources never contend.
//
// # A lone write (lone.go)
//
// Every request has one shape (pipeline.go): its fences, then each
// write's statements. A request with a business deadline (NotAfter) calls
// fencegw.not_after (sql/not_after.sql) after its fences, so PostgreSQL's
// clock decides it (*DeadlineError).
//
// An unkeyed request is one round trip: fences and statements pipelined as
// one batch ending in a single Sync, which PostgreSQL runs as one implicit
// transaction. That batch is sent as pgconn's batch of statements prepared
// by name on the connection (prepared.go), without pgx's pipeline
// bookkeeping; a statement gone stale there (a migration changed what it
// returns) fails the batch before anything commits, and the request runs
// once more, prepared anew. A context done at its deadline and at no
// other time (package timeout's, which the gateway's writes and the
// committer's transactions share) bounds that round trip by the
// connection's own deadline, rather than by pgx's watch of the context.
//
// # A keyed write: an explicit transaction (tx.go)
//
// A keyed request is an explicit transaction of two round trips: BEGIN,
// claim of the key, fences and statements; then its stored answer and
// COMMIT.
//
// # Outcomes (errors.go)
//
// Apply returns the request's answer (answer.go renders it, the API's
// JSON, stored with a keyed request's writes and replayed byte for byte),
// or an error: *StaleTokenError, *DeadlineError,
// *PreconditionError, *ConstraintError, *KeyMismatchError, *SQLError,
// ErrValue or ErrConflict (nothing written), ErrUnavailable (nothing
// written), or ErrUnavailable with ErrOutcomeUnknown (the connection
// failed after the commit was sent, or *CommitWarningError: PostgreSQL
// warned while it committed, and the commit may not last; commitwarning.go
// says why, and how every round trip that commits checks). In a batch, a write's error comes
// wrapped in *WriteError naming its index. Each error declares what it
// means for the request (package outcome: Applied, Refused, NotApplied,
// Unknown, and whether a refusal settles its idempotency key), in
// errors.go beside the error; outcome.Of and outcome.SettlesKey read the
// declarations, and package outcome states the rule every answer rests
// on. classify.go turns what PostgreSQL said into these errors.
//
// # A connection lost mid-write (classify.go)
//
// One predicate, sessionLost, decides whether an error ended the session,
// and one rule, lost, decides what a lost session means: unknown if the
// round trip carried the commit, not applied otherwise, since PostgreSQL
// rolls back a transaction whose session ends before COMMIT.
//
// # A keyed retry in flight (idempotency.go)
//
// The rule: an idempotency key is applied at most once, and its first
// final answer is every attempt's answer, whatever attempts overlap. A
// keyed request claims its key (fencegw.claim_key, sql/claim_key.sql) in
// its transaction (queueInTx): a concurrent request with the same key
// waits on the claim's row lock, and a key that completed is answered
// with its stored response (Replayed), stored with the COMMIT (commit, in
// tx.go). Settle (sql/settle_key.sql) makes a refusal decided outside the
// transaction (by the authority, or after it rolled back) the key's
// outcome, after waiting for an attempt in flight, so that no other
// attempt with the key can apply once a client was told it did not; which
// refusals settle a key, each error declares (package outcome), and the
// gateway's apply.go (settle) is the one caller that decides to settle.
//
// # Which writes share a transaction (groupcommit.go)
//
// The rule of which writes share a transaction is stated at the top of
// groupcommit.go, beside the code that applies it (take, run).
//
// Requests of one resource whose kind coalesces queue behind the
// resource's unit in flight (coalesce.go); when it commits, they become
// its next unit: one transaction, arrival order kept, one COMMIT, no
// answer before it. A resource has at most one unit in flight. Units run
// on a committer (committer.go) with a bounded number of transactions in
// flight: a unit that finds one free runs at once (a request that finds
// its resource idle runs on its caller's goroutine, exactly as without
// coalescing); the others wait in line, and the runner that finishes a
// transaction takes the line as its next. With group commit, it takes all
// of it (up to maxGroup requests), units of many resources in canonical
// order, in one transaction: so one commit makes many resources' writes
// durable. A transaction of several requests runs first without
// savepoints (several.go); if one request fails, it is rolled back and all
// of them run again, each in its own savepoint, so a refused or failing
// request rolls back alone and every answer comes from the transaction
// that commits. One that met another transaction in a deadlock or
// serialization failure, or a statement gone stale, is run again alone
// afterwards. Requests of several fences always run alone.
//
// # The authority record, the audit, inspection (authority.go, audit.go, history.go, advance.go, floor.go, inspect.go)
//
// Records is PostgreSQL's memory of the token authority, which package
// authority's Watchdog compares etcd with. RecordRejections and RunJanitor
// keep the bounded audit of refused writes and expire idempotency keys;
// RecordHistory and History write and read the lock history, which the
// janitor bounds too (history.go). AdvanceFence moves a fence up for an
// operator (advance.go). The fence floor (floor.go) keeps fencegw.fences
// bounded: RaiseFloor and PruneFences delete the rows at or below it,
// which fencegw.fence applies to a resource without a row. Fences,
// Rejections, Bypasses and TableSizes are `fencegw inspect`'s queries, and
// CheckPolicy asks PostgreSQL to plan every statement of a policy.
//
// # The functions it calls (sql/, definitions.go)
//
// The SQL functions on fencegw.* are defined in sql/, one file each, as
// they are now: those this package calls for the write path, the keys
// and the janitor (fence, stamp_unfenced, not_after, claim_key,
// settle_key, raise_fence_floor, prune_fences, advance_fence,
// trim_rejections, trim_history); expect_rows, which the policy's
// compiled statements call; and the SQL front's (package sqlfront):
// fence_session and refuse (frontsession.go), transaction_key and
// transaction_committed. Definitions hands them to package schema, which
// applies them after the gateway's migrations whenever the database holds
// something else. The migrations change tables and privileges only.
//
// # The fence only moves forward, whoever connects
//
// The gateway's database role holds no INSERT, UPDATE or DELETE on
// fencegw.fences and fencegw.fence_floor, and may only insert into the
// audit (fencegw.rejections, and not its id or time) and the lock
// history. It changes them only through functions that run with their
// owner's rights and cannot lower a fence or the floor, nor delete what
// their retention keeps: fence, advance_fence, raise_fence_floor,
// prune_fences (only rows at or below the floor), trim_rejections and
// trim_history. Each pins its search_path, checks its arguments, and is
// executable only by the roles `fencegw grants` names (guard.Grants).
// Whoever holds the gateway's credentials can still push a fence up (as
// a token it forged would), never back.
package fence
