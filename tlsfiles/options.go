package tlsfiles

import (
	"crypto/tls"
	"time"

	"github.com/fencegw/fencegw/internal/reload"
)

// Options tune how files are reloaded.
type Options struct {
	// Interval is the least time between two reads of a file; 0: a
	// second.
	Interval time.Duration
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// OnReloadError is told of a change that did not load: what is
	// "certificate" (a server's or client's certificate and key) or
	// "client-ca". The files as they were stay in force.
	OnReloadError func(what string, err error)
}

// reloadOptions are the options of one kind of file.
func (o Options) reloadOptions(what string) reload.Options {
	r := reload.Options{Interval: o.Interval, Now: o.Now}
	if o.OnReloadError != nil {
		r.OnError = func(err error) { o.OnReloadError(what, err) }
	}
	return r
}

// loadPair loads a certificate and its key, kept current.
func loadPair(certFile, keyFile string, o Options) (*reload.Files[*tls.Certificate], error) {
	return reload.Load([]string{certFile, keyFile}, func(c [][]byte) (*tls.Certificate, error) {
		return parsePair(certFile, keyFile, c[0], c[1])
	}, o.reloadOptions("certificate"))
}
