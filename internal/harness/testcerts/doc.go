// Package testcerts makes the certificates TLS tests need, in memory and
// as PEM files: a CA, server certificates it signs (DNS and IP names) and
// client certificates (a common name). Keys are ECDSA P-256: quick to
// make, accepted by etcd, PostgreSQL and Go alike. Tests call the
// methods that take a testing.TB; WriteFiles is for harnesses that run
// outside a test.
package testcerts
