// Package gateway is fencegw's HTTP API. It turns requests into typed
// calls of package fence (the fenced transaction) and package authority
// (leases and token validation), and typed results into answers. It holds
// no lease or fence state of its own: any number of replicas can serve
// the same clients. It runs nothing in the background: what a replica
// does besides answering is package node's, beside it (The node, below).
//
// # Routes
//
// POST /v1/ops/{operation} is one fenced write; POST /v1/batch several,
// all or nothing; /v1/leases takes, renews, observes and releases locks;
// /livez, /readyz and /metrics are for operators, and so is /status, a
// page for people (embedded in the binary) that polls GET /v1/status.
//
// # Who is calling
//
// A client proves who it is by a bearer token, a JWT (Config.VerifyJWT)
// or a client certificate (identify); whichever way, it is one policy client, whose name binds its
// tokens and whose operations it may call. With Config.ClientCAs, every
// request's certificate is checked on every route, against the CAs in
// force, before anything else (checkClientCert); OpsHandler serves health
// and metrics apart, for a listener without TLS.
//
// # The write path
//
// A write is authenticated and authorised (when the policy declares
// clients), its Fencing-Token field parsed (E:R, or an RFC 8941
// dictionary of one token per role), its body decoded strictly by the
// operation's declaration, and its resources derived from the arguments:
// the client never names a resource. Every token is then validated by the
// authority (its signature before the admission gate, the rest after:
// authority/validate.go), and the request applied by fence.Store in one
// transaction.
// Once parsed, a write runs to completion or its own deadline, not the
// client's: a disconnect must not leave its outcome to chance.
//
// # Admission
//
// At most MaxInFlight writes are past the admission gate at once (gate.go).
// A write's body is read first (gateWrites), its caller authenticated, its
// request decoded and every token's signature decided (admitCalls, with
// the handler's prepare function: call.go), and then it waits for a turn
// on a shallow stack, refused unapplied after QueueTimeout. A call refused
// by then is answered without a turn, unless it is keyed (its refusal is
// stored as its key's outcome). Turns are shared fairly between clients
// (internal/admission), and a write gives its turn back while its token
// waits on etcd (turn.go): a flood of forged tokens slows its own client only.
// Leases, health and metrics are never gated.
//
// # Idempotency and refusals
//
// A keyed write that is refused for good (stale, rejected, precondition,
// constraint) has the refusal stored as its key's outcome (fence.Store
// Settle), so no earlier attempt with the key can still apply after the
// client was told it did not. A token the authority refuses is answered
// with the key's stored outcome if it has one, whatever became of the
// token's key or epoch since.
//
// # Problems
//
// Every error becomes an RFC 9457 problem document in exactly one place,
// problemFor, with the resource, role, batch index and tokens it concerns;
// 503s say whether the write was applied (outcome not-applied or unknown).
// Refusals are counted, logged, and the stale or unissued ones audited
// (audit.go, through the node).
//
// # Leases
//
// The lease API is etcd's concurrency recipe over HTTP, so any language can
// hold a lock: grants in arrival order, keepalives, release, observation.
// A holder may publish a new value (PATCH); GET /v1/leases/watch streams a
// lock's changes as Server-Sent Events with etcd revisions as event IDs
// (watch.go), bounded apart from the other lease calls.
//
// # Operators and the lock history
//
// An operator's client (operations ["*"]) may revoke any lease and advance
// any fence (admin.go, POST /v1/admin/…), each with a reason. Grants and
// the operators' verbs go to the lock history through the node, off the
// request path.
//
// # The node (node.go)
//
// Config.Node is what the handlers need of the replica's background work
// (package node; serve makes it with the same pool, authority and policy,
// and runs its loops): queues they feed and never wait for (the audit of
// refusals, the lock history), and what they read of the loops (this
// replica's name, which its grants name as the measurer of their hold
// time; the other replicas' policies for /readyz; the status page's chart;
// the reaper's count and the node's metrics for /metrics), and the
// watchdog's recheck for a token of a newer epoch (apply.go). The status
// chart samples this gateway's counters (WriteCounts, writecounts.go).
package gateway
