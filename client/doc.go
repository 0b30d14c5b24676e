// Package client is the Go client of the fencegw gateway: it takes leases on
// resources, keeps them alive, and sends fenced writes carrying the lease's
// token, refusing to send once the lease is lost or past its local deadline.
package client
