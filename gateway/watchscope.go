package gateway

import (
	"fmt"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/policy"
)

// mayWatch says whether client c may follow target: a lock or a prefix
// that is the client's to lease (policy.Lease, policy.LeasePrefix), or
// every lock, which names every resource locked and every lease's value
// as GET /v1/status does, and so needs what the status needs: operations
// ["*"] when the policy declares clients. The status page follows every
// lock this way.
func (g *Gateway) mayWatch(c *policy.Client, target authority.WatchOptions) error {
	switch {
	case target.All:
		if c != nil && !c.MayCallEvery() {
			return fmt.Errorf("%w: client %s may not follow every lock (all=true): it needs operations [\"*\"], as GET /v1/status does; follow a resource or prefix of its own instead", ErrForbidden, c.Name)
		}
		return nil
	case target.Resource != "":
		_, err := g.cfg.Policy.Lease(c, target.Resource)
		return err
	default:
		return g.cfg.Policy.LeasePrefix(c, target.Prefix)
	}
}
