// Package check is the torture test's checker: a pure function from the
// workers' histories, the log table's rows, the fences read and the
// holders' logs of grants to a Report
// that either finds no stale, lost, duplicated, refused or unexplained
// write in PostgreSQL — nor a fence below a token applied or acknowledged,
// nor a row carrying a token its write was not sent with, nor a client
// that called a lease valid past its deadline on either clock — or lists
// the violations, each with the rows and events that prove it. A strict
// resource's fence lets a token write once: there an equal token is stale.
// On a lease-churn resource every lease writes once: its tokens are held
// to strictly increasing in commit order, and its grants to etcd's order
// (a lease asked for after another was granted has the newer token).
//
// It trusts three things it cannot verify: a worker records "invoke" before it
// sends the write, a holder reads a grant's asked time before it sends the
// acquisition, and ascending row ID is commit order within a resource
// (the ID is taken under the fence's row lock).
package check
