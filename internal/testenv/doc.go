// Package testenv gives every test binary one real PostgreSQL server and one
// embedded etcd, started from TestMain via Run, plus per-test databases and clients.
package testenv
