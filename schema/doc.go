// Package schema applies golang-migrate migrations: the gateway's own schema,
// embedded in the binary, and an application's migration folder, each with
// its own version table.
package schema
