// Package sqlfront is the gateway's SQL front: a PostgreSQL wire-protocol
// listener (serve --pg-listen) through which an unchanged application,
// driver, ORM or psql session writes the guarded tables under the same
// fence, tokens, policy and audit as the HTTP path. It speaks the
// protocol with pgproto3 on both sides; it knows the SQL of fencegw's
// functions only through package fence, and no HTTP.
//
// # Who connects
//
// A client of the policy connects with its name as the user and proves
// who it is as on HTTP: a client certificate over TLS, or its bearer key
// as the password, taken only over TLS or from the loopback interface
// (auth.go). It must declare an sql_role: its session runs on a backend
// of its own, logged in as that role, a role that can write the
// application's tables and cannot fence, bypass or touch fencegw's own
// (fence.CheckFrontRole refuses one that could). Connections are
// limited in all and per client (server.go).
//
// # Limits and fairness
//
// A session has a turn at the front's gate while it has work in
// PostgreSQL, from the first message it sends there while idle until it
// is idle again: a transaction and its waits, or a statement outside
// one. At most MaxTransactions are taken; more wait, and a turn given
// back goes to a waiting session of the client that holds the fewest,
// as the HTTP path's writes share theirs (package internal/admission):
// one client's many busy connections cannot starve another client's
// transaction. A statement that waits past QueueTimeout is refused
// (53000), nothing of it sent (turn.go). Idle sessions, in a transaction
// or not, and statements that run too long are ended or cancelled by
// the loop's timers (loop.go).
//
// # Fencing a transaction
//
// Inside a transaction block the client names its fences:
//
//	SET LOCAL fencegw.tokens = 'account/acct-1=1:42:SIG, account/acct-2=1:57:SIG'
//
// or set_config('fencegw.tokens', …, true). The front answers that
// statement itself, and PostgreSQL never sees the tokens as a setting
// (classify.go). It validates each token exactly as the HTTP path does,
// then advances the fences at that point of the transaction with
// fencegw.fence_session, which fences a backend's transaction only for
// a caller presenting a MAC of the fences under the key the front
// registered for that backend through the gateway's own connection
// (package fence, frontsession.go): the session's own role cannot
// imitate it. The application's statements then run as written; the
// guard triggers admit only rows of the fenced resources. Before a COMMIT
// of a fenced transaction the front asks whether a newer holder has
// taken its locks meanwhile (a watched view of the holders, or etcd),
// and rolls it back if so (commitcheck.go).
//
// # Answers
//
// A stale token is FG409 (the message names the fence), a refused one
// FG403, an authority that cannot be asked 40001 (nothing written: retry
// the transaction); a COMMIT whose connection to PostgreSQL was lost, or
// that PostgreSQL warned about, 08007, its outcome unknown (commit.go).
// Refusals of tokens are in fencegw.rejections with the client, the
// connection and the statement's number. What the front cannot relay
// faithfully it refuses with an ErrorResponse: COPY, LISTEN, two-phase
// commit, fast-path calls, any other use of fencegw.* settings.
//
// # Relaying
//
// Each session has one goroutine, the loop, that owns its state
// (session.go, loop.go), and three that move bytes (pumps.go), in frames
// (frames.go). Answers are read against the messages that asked for
// them (relay.go, answers.go), so that the front knows whose each one is
// and where its own answers go; the extended protocol's
// statements and portals are followed by name (extended.go), a simple
// query split only around the statements the front answers or checks
// (query.go); the front's own statements run in the session's
// transaction as the unnamed statement, their answers kept from the
// client (call.go).
package sqlfront
