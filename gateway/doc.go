// Package gateway is fencegw's HTTP API: it turns a fenced write request
// into one pipelined PostgreSQL transaction that advances the resource's
// fence and applies the operation, or refuses it with a problem document.
package gateway
