// Package schema applies golang-migrate migrations: the gateway's own schema,
// embedded in the binary, and an application's migration folder, each with
// its own version table. After a source's migrations, Up applies its
// definitions: the current SQL of its functions, one file each, kept
// beside the Go that calls them and applied again whenever the database
// holds something else (definitions.go).
package schema
