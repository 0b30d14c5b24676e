package client

import "github.com/fencegw/fencegw"

// Version is the client's version: the repository's VERSION, the one the
// gateway (`fencegw version`, GET /v1/status) and the Python and
// TypeScript clients report. Requests carry it in User-Agent.
func Version() string { return fencegw.Version() }

var userAgent = "fencegw-go/" + Version()
