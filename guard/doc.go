// Package guard puts fencegw's guard triggers on the tables a policy lists
// (policy.GuardedTable), checks them and takes them off. The trigger
// functions themselves are defined in sql/ (guard_row.sql and the others),
// which package schema applies with the gateway's schema: a guarded row
// may be written only inside a gateway write fenced on the row's resource,
// or after SELECT fencegw.bypass('why') in the same transaction, which is
// logged in fencegw.bypass_log. Grants (grants.go) writes the SQL that
// gives the gateway's role exactly what `fencegw serve` needs for a
// policy, and nothing else.
package guard
