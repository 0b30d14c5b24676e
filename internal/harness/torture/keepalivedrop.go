package torture

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/fencegw/fencegw/client"
)

// keepaliveDrop passes requests to base but fails the keepalives of the
// leases abandoned, as a holder that crashed or froze sends none: the
// gateway lets such a lease expire, and its client's deadline ends it.
type keepaliveDrop struct {
	base http.RoundTripper
	mu   sync.Mutex
	ids  map[string]bool
}

// errAbandoned is what a keepalive of an abandoned lease gets.
var errAbandoned = errors.New("torture: keepalive not sent: the lease was abandoned")

// abandon drops l's keepalives from now until it has ended.
func (d *keepaliveDrop) abandon(l *client.Lease) {
	d.mu.Lock()
	d.ids[l.ID()] = true
	d.mu.Unlock()
	context.AfterFunc(l.Context(), func() {
		d.mu.Lock()
		delete(d.ids, l.ID())
		d.mu.Unlock()
	})
}

func (d *keepaliveDrop) RoundTrip(req *http.Request) (*http.Response, error) {
	if id, ok := strings.CutPrefix(req.URL.Path, "/v1/leases/"); ok {
		if id, ok = strings.CutSuffix(id, "/keepalive"); ok {
			d.mu.Lock()
			dropped := d.ids[id]
			d.mu.Unlock()
			if dropped {
				return nil, errAbandoned
			}
		}
	}
	return d.base.RoundTrip(req)
}
