// Package testenv gives every test binary one real PostgreSQL server and one
// embedded etcd, started on first use and stopped by Run from TestMain, plus
// per-test databases and clients.
package testenv
