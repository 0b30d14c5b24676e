// Package torture runs fencegw under faults — lock holders frozen past
// their leases, gateways killed, PostgreSQL restarted — and checks from the
// database that no stale write landed and no acknowledged write was lost.
package torture
