// Package check is the torture test's checker: a pure function from the
// workers' histories, the log table's rows and the fences read to a Report
// that either finds no stale, lost, duplicated, refused or unexplained
// write in PostgreSQL — nor a fence below a token applied or acknowledged,
// nor a row carrying a token its write was not sent with, nor a client
// that called a lease valid past its deadline on either clock — or lists
// the violations, each with the rows and events that prove it. A strict
// resource's fence lets a token write once: there an equal token is stale.
//
// It trusts two things it cannot verify: a worker records "invoke" before it
// sends the write, and ascending row ID is commit order within a resource
// (the ID is taken under the fence's row lock).
package check
