package conformance_test

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// harness is the harness's part of a scenario: what it sets up before
// answering the start (faults armed, a lock held), what it does at each
// ready step, and what it checks beyond the scenario's expect.
type harness struct {
	setup func(s *run, gw *gatewaySpec, vars map[string]any)
	steps map[string]func(s *run, data map[string]any) map[string]any
	check func(s *run, observed map[string]any)
}

// harnesses, by scenario id; each scenario's part is in the file of its
// kind (harness_lease_test.go, harness_write_test.go, …).
var harnesses = map[string]harness{}

// eventTimeout bounds the harness's waits for events: generous, since a
// correct run never waits that long and a busy machine may be slow.
const eventTimeout = 60 * time.Second

// waitFor waits for cond, an event, or fails the scenario saying what did
// not happen.
func (s *run) waitFor(what string, cond func() bool) bool {
	s.t.Helper()
	if !testenv.WaitFor(eventTimeout, cond) {
		s.t.Errorf("waited %s for %s", eventTimeout, what)
		return false
	}
	return true
}

// observe is the lock of resource as the gateway shows it; nil, the test
// failed, if the gateway cannot say.
func (s *run) observe(resource string) *client.LockState {
	s.t.Helper()
	st, err := s.e.client.Observe(s.ctx, resource)
	if err != nil {
		s.t.Errorf("observe %s: %v", resource, err)
		return nil
	}
	return st
}

// checkFree fails the scenario unless nobody holds or waits for resource:
// every lease of the runner was released, none taken again behind its
// back.
func (s *run) checkFree(resource string) {
	s.t.Helper()
	st := s.observe(resource)
	if st != nil && (st.Holder != nil || st.Waiting != 0 || len(st.Holders) != 0) {
		s.t.Errorf("%s after the scenario: holder %+v, holders %+v, %d waiting; want it free", resource, st.Holder, st.Holders, st.Waiting)
	}
}

// acquire takes resource for the harness (a successor, a holder others
// wait for), released when the scenario ends.
func (s *run) acquire(resource string, opts client.AcquireOptions) *client.Lease {
	s.t.Helper()
	l, err := s.e.client.Acquire(s.ctx, resource, opts)
	if err != nil {
		s.t.Errorf("the harness's lease on %s: %v", resource, err)
		return nil
	}
	s.t.Cleanup(func() { _ = l.Release(s.ctx) })
	return l
}

// place parses an unsigned token, E:R or E:R#k, into its order.
func place(token string) (epoch, revision int64, err error) {
	e, r, ok := strings.Cut(client.Unsigned(token), ":")
	r, _, _ = strings.Cut(r, "#")
	if !ok {
		return 0, 0, fmt.Errorf("token %q is not E:R", token)
	}
	if epoch, err = strconv.ParseInt(e, 10, 64); err == nil {
		revision, err = strconv.ParseInt(r, 10, 64)
	}
	return epoch, revision, err
}

// after reports whether token a comes after token b in the order.
func after(a, b string) bool {
	ea, ra, err1 := place(a)
	eb, rb, err2 := place(b)
	return err1 == nil && err2 == nil && (ea > eb || ea == eb && ra > rb)
}

func str(v any) string { s, _ := v.(string); return s }

func num(v any) float64 { f, _ := v.(float64); return f }

// harnessError is a step's answer when the harness could not do its part:
// the scenario has failed already, and the runner goes on to its result.
func harnessError(err error) map[string]any { return map[string]any{"harness_error": err.Error()} }
