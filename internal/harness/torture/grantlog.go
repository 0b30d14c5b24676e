package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/torture/check"
	"github.com/fencegw/fencegw/tokens"
)

// grantLog is a holder's log of grants (check.Grant): each lease it was
// granted, with when it asked and when the answer came, which the checker
// holds to etcd's order. A nil *grantLog records nothing.
type grantLog struct {
	worker int
	mu     sync.Mutex
	file   *os.File
	enc    *json.Encoder
}

// grantsPath is the log of grants of worker (or nemesis holder) i.
func grantsPath(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("grants-%d.jsonl", i))
}

func newGrantLog(path string, worker int) (*grantLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &grantLog{worker: worker, file: f, enc: json.NewEncoder(f)}, nil
}

func (g *grantLog) close() {
	if g != nil {
		g.file.Close()
	}
}

// acquire asks c for a lease on resource and records its grant, with how
// its holder means to let it go (end, a check.GrantEnd…). The asked time
// is read before the request leaves, the granted time after the answer
// came, both on the true clock, as the histories' are.
func (g *grantLog) acquire(ctx context.Context, c *client.Client, resource string, opts client.AcquireOptions, end string) (*client.Lease, error) {
	asked := time.Now()
	l, err := c.Acquire(ctx, resource, opts)
	if err != nil || g == nil {
		return l, err
	}
	granted := time.Now()
	tok, err := tokens.Parse(client.Unsigned(l.Token()))
	if err != nil {
		return l, nil // the checks of its write report it
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// A grant left out of the log makes its check more lenient, never
	// stricter.
	_ = g.enc.Encode(check.Grant{Worker: g.worker, Resource: l.Resource(), Token: tok, Asked: asked, Granted: granted, End: end})
	return l, nil
}
