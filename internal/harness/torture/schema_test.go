package torture

import (
	"testing"
	"time"

	fgpolicy "github.com/fencegw/fencegw/policy"
)

// TestPolicyCompiles: the run's policy compiles, with and without clock
// faults, in the policy's current words.
func TestPolicyCompiles(t *testing.T) {
	for _, cfg := range []Config{{Coalesce: true}, {GroupCommit: true, Coalesce: true, ClockFaults: true, TTL: 10 * time.Second}} {
		p, err := fgpolicy.Parse("torture.yaml", []byte(policy(cfg)))
		if err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		if d := p.Deprecations(); len(d) > 0 {
			t.Errorf("%+v: deprecated words %q", cfg, d)
		}
	}
}
