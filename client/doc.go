// Package client is the Go client of the fencegw gateway: it takes leases on
// resources, keeps them alive, and sends fenced writes carrying the lease's
// token, refusing to send once the lease is lost or past its local deadline.
// It speaks to http:// and https:// gateways (WithTLSFiles: a CA, a client
// certificate), proving who it is by a bearer token, a bearer file read
// again before each request (WithBearerFile: a rotating JWT), or its
// certificate.
package client
