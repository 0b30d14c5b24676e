// Package node is what one running replica of fencegw does besides
// answering requests: the audit of refusals, the lock history, the
// janitor and pruning, the replicas' agreement on the policy, the hold
// times and the reaper of leases, the status page's chart, and the
// authority's watchdog. Package gateway answers HTTP and reads the node
// through gateway.Config.Node; serve makes both with one pool, authority
// and policy, and runs the node's loops beside the gateway until it shuts
// down. The node knows no HTTP (TestLayering says so): it speaks SQL
// through package fence and etcd through package authority.
//
// Each Run method is one loop, run until its context ends; a replica that
// runs none still answers, its queues dropping what does not fit. Nothing
// a node holds is needed by another replica: what it records is in
// PostgreSQL, and every replica runs the same loops.
//
// # The node and its metrics (node.go)
//
// New makes the node from the pool, the authority and the policy the
// gateway serves with. Collectors are its metrics, which the gateway
// serves on /metrics beside its own. The watchdog (authority.Watchdog)
// halts the authority when etcd went back in time; serve checks once
// before it serves and runs it, and the gateway's write path asks for a
// Recheck when a token carries an epoch the replica has not seen.
//
// # The audit (audit.go)
//
// Audit queues a refusal of the fence for fencegw.rejections, the
// gateway's and the SQL front's alike; RunAudit writes them several rows
// at a time.
// Each client and kind of refusal has a rate: past it, one summary row
// per resource stands for the rest, so that one client's flood costs a
// bounded number of rows and cannot hide another's.
//
// # The lock history (history.go)
//
// AddHistory queues a grant or an operator's verb; RunHistory writes the
// queue and watches etcd for how every lease ended, resuming after the
// history's cursor so that the ends no replica saw are recorded too. A
// request's event never waits for the queue: past its bound it is
// dropped, and counted.
//
// # The janitor and pruning (prune.go)
//
// RunJanitor expires idempotency keys and trims the audit and the
// history; RunPruning raises the fence floor below every live lease's
// token and deletes the fence rows at or below it, deletes the etcd
// transitions keys of idle locks, and refreshes the table-size gauges. A
// halted authority prunes nothing.
//
// # The replicas (replicas.go)
//
// RunReplicaCheck announces this replica's policy in PostgreSQL and learns
// which others run another; PolicyCheck is /readyz's word on it. Name is
// the replica's, as the others see it.
//
// # Leases (leases.go)
//
// RunHoldTimes measures how long the locks this replica granted were
// held; RunReaper revokes the leases nobody renews any more and the holds
// past their max_hold, and Reaped counts them.
//
// # The status page's chart (rates.go)
//
// RunStatusRates samples the gateway's counters (gateway.WriteCounts)
// every RateEvery; Rates are the last five minutes of them.
package node
