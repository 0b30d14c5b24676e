// Package schema applies golang-migrate migrations: the gateway's own schema,
// embedded in the binary, and an application's migration folder, each with
// its own version table. After a source's migrations, Up applies its
// definitions: the current SQL of its functions, one file each, kept
// beside the Go that calls them and applied again whenever the database
// holds something else (definitions.go).
//
// What the gateway's tables look like now is read in one file,
// current.sql, which pg_dump makes of a freshly migrated database; the
// migrations are its history, and TestCurrentSchema fails when one
// changes a table and current.sql was not made again.
package schema
