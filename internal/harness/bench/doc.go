// Package bench is the load generator behind `fencegw bench`: it measures
// the same fenced writes sent directly through pgx and through the
// gateway's HTTP API, cell by cell over client counts and key
// distributions, and reports throughput, exact latency percentiles and
// their ratio.
//
// # The gateway under test
//
// A cell's gateway (target.go) is one in this process, started for the
// cell, whose allocations and memory the runtime's counters see; or
// Config.Replicas `fencegw serve` processes started for the cell
// (replicas.go), the load's connections spread over them round-robin;
// or a running gateway (Config.GatewayURL). A hot resource's writes
// spread over replicas are coalesced per replica: N batches take the
// fence row's lock in turn, each committing before the next, where one
// replica would have sent one.
//
// # Other load
//
// With Config.Wrk, wrk loads the cell's gateway after the bench's own
// client, with a generated Lua script sending the same writes
// (wrkscript.go), and the report sets its figures beside the client's.
// With Config.IdleConnections, keep-alive connections are held open to
// the gateway through the cell, and its RSS is read around them
// (idle.go, memory.go).
package bench
