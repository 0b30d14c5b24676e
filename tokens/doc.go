// Package tokens defines fencing tokens as values, and what may be said
// about them, without anything that issues or stores them: the policy
// loader, the fenced transaction (package fence) and the fault-run
// checker use it without an etcd client. The authority that issues tokens
// is package authority; the resource side that enforces them is package
// fence.
//
// # Tokens and their order (token.go)
//
// A Token is (Epoch, Revision): an operator-controlled epoch and the etcd
// create revision of the holder's lock key, which etcd makes strictly
// increasing across its whole cluster. Tokens compare epoch first, then
// revision (Compare); a bumped epoch makes every older token stale even
// after a restored etcd starts issuing lower revisions again. The text form
// is "E:R"; Parse is strict, so one token has exactly one spelling (no
// sign, space or leading zero; both numbers 1 to math.MaxInt64, a
// PostgreSQL bigint).
//
// # Permits (permit.go)
//
// A semaphore of N permits grants up to N holders at once, each one slot
// (1 to N) with a lock and a fence of its own, under the resource
// PermitResource(semaphore, slot): "pool/p1#2". A permit's token names
// its slot, "E:R#P" (Token.Permit), and is signed for the slot's resource
// under a MAC tag of its own, so that it is never a lock's token nor
// another slot's.
//
// # Signatures: a token is a capability (keyring.go, redact.go)
//
// The gateway grants a token as "E:R:SIG": an HMAC-SHA256 truncated to 128
// bits over the numbers, the resource it was granted for and the client it
// was granted to (Keyring). The number alone is no capability: a revision
// read off /metrics, another account's token or another client's is
// refused. Order ignores the signature. Keys rotate: the newest key whose
// time has come signs, every key of the ring verifies. Invariant: a
// signature appears nowhere but in the lease grant and the keepalive
// answer that re-signs it; everything else shows Unsigned() (E:R), and
// Redact hides what may be one in text echoed from a request.
//
// # Resources (resource.go)
//
// A resource is the name of what one lock protects ("account/acct-1").
// CheckResource refuses names that could be two locks looking like one:
// invalid UTF-8, control or invisible characters, surrounding spaces,
// more than MaxResourceLen bytes.
//
// # What the authority may say (errors.go, validation.go, epoch.go)
//
// Validation is how much of the authority's word a resource's writes need
// on top of the fence: its signature (ValidateFence, the default), the
// live holder (ValidateHolder), or the number alone (ValidateRevision).
// A refusal is a *RejectedError, whose Issued says whether the authority
// ever issued the token (a refusal of an issued token depends on time and
// settles an idempotency key; one of a forged token does not). An
// authority found rolled back or replaced is halted (*HaltedError) until an
// operator bumps the epoch; View is what etcd says of itself at one
// moment, and Record what PostgreSQL remembers of it, which the
// authority's Watchdog (authority.Watchdog) compares.
package tokens
