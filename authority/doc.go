// Package authority is the token authority backed by etcd: it grants
// leases on resources, issues their fencing tokens and vouches for tokens
// presented with writes. It keeps no state of its own beyond a watermark,
// so any number of gateways can share one etcd cluster.
//
// # Locks and tokens
//
// A lease on a resource is an etcd lease with a key under
// /fencegw/locks/<escaped resource>/<lease id>. The holder is the key with
// the lowest create revision (etcd's concurrency.Mutex recipe: each waiter
// watches only its predecessor, so waiters are granted in arrival order).
// The token is (epoch, create revision of the holder's key); the epoch is
// read in the same etcd transaction that creates the key. So the keys
// there now are every token a live lease holds or may be granted, and
// TokenFloor (floor.go) names a token below all of them: how far the
// fence floor may rise, for pruning fence rows.
//
// # Leases apart from locks
//
// As etcd keeps concurrency.Session apart from Mutex, the lease and the
// lock it holds live apart. The lease (lease.go): its owner, its renewal
// and re-signing (leaserenew.go, signers.go), its release and abandonment
// (leaserelease.go), how it ended (leaseend.go), its hold records and the
// reaper (holdbound.go). The lock (lock.go): the key in line, the holder,
// the wait for a turn (lockwait.go), lock-delay (lockdelay.go), the
// holder's record (holderrecord.go), a semaphore's line and slots
// (semaphore.go). Acquire (acquire.go) takes a lease and then its lock;
// an idempotent acquisition (acquirekey.go) joins the lease of its first
// attempt. Every etcd transaction is built of named operations, and its
// responses are read by name (txn.go).
//
// # Semaphores
//
// A semaphore of N permits (AcquireOptions.Permits) admits the first N
// leases of its line (/fencegw/queues/, in arrival order) and gives each
// a free slot k: a lock key of the slot's resource, "<semaphore>#k",
// created only while the slot has none (semaphore.go). The permit's token
// is that key's create revision with the permit k, signed for the slot's
// resource; the slot's fence refuses a paused earlier holder as a lock's
// would. Slot keys are lock keys, so TokenFloor, holder validation,
// observation, watches and lease ends see each slot as a lock.
//
// # Validation
//
// Validate (validate.go, the signed-token check) is the authority's word
// on a token: in fence mode, that it was issued (its signature, by
// checkSigned, and the current epoch); in holder mode, also that it is the
// live holder of the resource now. CheckSignature is its first part alone,
// which the gateway asks before a write takes a turn at its gate. In every mode a token from the
// future (a revision above the newest etcd has issued, an epoch above
// etcd's) is refused as never issued, at the cost of one shared etcd read
// for such tokens only (future.go). It is already old when the write
// commits: the fence in PostgreSQL is what refuses a stale holder.
//
// # Signing keys
//
// A token is signed for its resource and client by a key kept in etcd
// (keys.go, loaded by keyload.go); a rotated key is loaded by every
// replica before it signs. Each lease records which key signed its grant
// (signers.go), a keepalive signs its token again with the newest key
// (leaserenew.go), and RetireKeys (retire.go) keeps every key a live lease may
// hold a token of. A retired key is kept aside only to name the refusal of
// its tokens. A signature no loaded key verifies is checked against etcd,
// and is unavailable, not refused, when etcd cannot be asked.
//
// # Epochs and rollback
//
// The epoch lives at /fencegw/epoch and in PostgreSQL. Check compares
// what etcd says about itself with what the resource side remembers (a
// RecordStore) and halts the authority if etcd went back in time (a
// restore without --bump-revision) or was replaced; Bump starts a new
// epoch after an operator has looked.
//
// # Lock-delay and observation
//
// After a lease expires (not on release), the lock can be withheld for a
// resource's lock delay, so a slow holder gets time to stop. etcd's lease
// expiry alone decides when it ends (lockdelay.go). Observe shows
// a resource's holder and waiters, for leader election; ObserveAll every
// resource's holder and how many wait, for inspect and the status page;
// ObserveSemaphore a semaphore's slots' holders and its line
// (observesemaphore.go).
//
// # Watches and transitions
//
// Each grant records the holder (lease, token, value) in a key attached to
// its lease and counts itself in the resource's transitions key, in the
// transaction that grants it (lockgrant.go, holderrecord.go); SetValue
// rewrites the record, and a release or revocation marks how the lease
// ends before it ends. Watch
// follows those records with one etcd watch from a revision, so a watcher
// that resumes after the last revision it saw misses nothing.
//
// # How leases end, and operators
//
// A release or a revoke records, attached to the lease, how it ends and by
// whom just before revoking it; WatchLeaseEnds reads that record from the
// deletion of a lease's keys, and reports every held lease's end:
// released, revoked or, without a record, expired (leaseend.go). Revoke,
// LeaseInfo, HolderLease and FirstToKeep serve the operator's verbs
// (revoke.go).
//
// # What an acquisition costs etcd
//
// A lock costs no more round trips and Raft proposals than etcd's own
// Session and Mutex, where its guarantees allow. A free lock is taken
// with two round trips and two proposals, as the Mutex's: the lease's
// grant, with the owner's count of leases and the record of an earlier
// attempt with the same key read beside it (leasegrant.go), then one
// transaction that puts the key in line, finds it first, and records the
// grant, the hold and a keyed acquisition (lockgrant.go). A release is a
// transaction that marks it (the watchers' "released", the owner's
// check) and the lease's revoke: two, as the Mutex's Unlock and Close.
// Under load it costs less than the Mutex: the transactions that put keys
// of different resources in line, and the release marks, that queue while
// one is in flight go as one (txngroup.go), a round trip and a proposal
// for all of them.
//
// What costs more, and why:
//   - A lock granted after a wait records its grant once it has the lock,
//     a transaction more, sent with the renewal that gives the holder its
//     whole TTL: the holder's record, the hold and the hold time start at
//     the grant, which is not known when the key is put in line. Woken,
//     it reads the line and then sends the two: two round trips, as the
//     Mutex's two reads, and a proposal more than its two. (A keyed one
//     claims its key in the transaction that puts it in line, so that a
//     retry meanwhile joins it instead of queueing a second lease.)
//   - A lock with a lock-delay grants a lease for its last-holder record
//     and records it, two more to take it, and revokes that lease, one
//     more to release it: the delay lease is granted after the holder's,
//     so that it outlives it by the delay, and revoked before it, so that
//     a release owes no delay. A keyed one records its key as granted
//     once the delay is recorded, one more, so that no retry is answered
//     with a lease whose delay could not be.
//   - A semaphore's permit is its line, then its slot, a transaction
//     each: admission is a count of the line, which no etcd comparison
//     can make, so the slot is claimed (and the grant recorded with it)
//     by a second transaction, once the first has read the line ahead and
//     the slots (semaphore.go, semaphoreslot.go). A keyed one rewrites
//     its key's record once its token is known, one more: the record was
//     made as it joined the line.
//   - A grant whose epoch key changed since this process last read it,
//     or whose signing key was retired, is recorded as after a wait: the
//     records name the token's epoch and signer, which only a read says.
package authority
