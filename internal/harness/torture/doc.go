// Package torture runs fencegw under faults and checks from the database
// that no stale write landed and no acknowledged write was lost.
//
// The faults (faults.go lists them): lock holders frozen past their
// leases, suspended with their monotonic clock held back, throttled by a
// cgroup CPU limit, their wall clocks stepped; gateways killed, or frozen
// in the middle of a transaction, or their clocks for max_hold and the
// lease reaper stepped; etcd members killed or frozen, etcd's quorum
// lost, etcd rolled back to a snapshot; PostgreSQL restarted or failed
// over; each gateway's network to etcd and PostgreSQL slowed or
// partitioned, one way or both (links.go); lease-churn workers, holders
// of many short leases of one write each, stopped while the nemesis
// takes the next lease after theirs (churn.go, nemesis_churn.go). The
// nemesis injects each kind once before it rolls, and a run is not done
// before each has happened (a worker's clock fault happens when a
// worker's write reached the client's check it is for, not when the
// worker was stopped; a step of a gateway's wall clock when a reaper
// revoked a lease by it).
package torture
