// Package bench is the load generator behind `fencegw bench`: it measures
// the same fenced writes sent directly through pgx and through the
// gateway's HTTP API, cell by cell over client counts and key
// distributions, and reports throughput, exact latency percentiles and
// their ratio.
package bench
