package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/policy"
)

// TestReplicasWithAnotherPolicyAreReported: two replicas on one database,
// one validating tokens as `holder` where the other uses the default: each
// names the other in /readyz as running other fence settings (still 200:
// a rolling policy change looks like this for a while), a replica with a
// file that differs only in a comment is reported as another file, and
// as the replicas withdraw, /readyz says so, and ok once they agree.
func TestReplicasWithAnotherPolicyAreReported(t *testing.T) {
	ctx := context.Background()
	const every = time.Second
	h := newHarness(t, demoPolicy(t, "monotonic"))
	holder := h.sibling(withPolicy(t, strings.Replace(h.policy, "compare: monotonic", "compare: monotonic\n    validation: holder", 1)))
	comment := h.sibling(withPolicy(t, h.policy+"\n# a comment\n"))

	policyOf := func(x *harness) string {
		t.Helper()
		r := x.do(http.MethodGet, "/readyz", nil, "")
		var body struct{ Checks map[string]string }
		if err := json.Unmarshal(r.Body, &body); err != nil || r.Status != http.StatusOK {
			t.Fatalf("readyz: %d %s (%v), want 200", r.Status, r.Body, err)
		}
		return body.Checks["policy"]
	}
	if got := policyOf(h); got != "not checked yet" {
		t.Fatalf("policy check before any announcement: %q", got)
	}
	for _, x := range []*harness{h, holder, comment, h, holder, comment} { // twice: each sees the others
		if err := x.node.CheckReplicas(ctx, every); err != nil {
			t.Fatal(err)
		}
	}
	if got := policyOf(h); !strings.Contains(got, "2 replica(s) run other fence settings") {
		t.Errorf("the default replica says %q, want both others named, with other fence settings", got)
	}
	if got := policyOf(holder); !strings.Contains(got, "2 replica(s)") || !strings.Contains(got, "other fence settings") {
		t.Errorf("the holder replica says %q", got)
	}

	// The holder replica stops: it withdraws, and the others agree again
	// on their next check (the commented file differs, its fences do not).
	withdraw(holder)
	for _, x := range []*harness{h, comment} {
		if err := x.node.CheckReplicas(ctx, every); err != nil {
			t.Fatal(err)
		}
	}
	if got := policyOf(h); !strings.Contains(got, "1 replica(s) run another policy file (") {
		t.Errorf("after the holder replica left, the default one says %q, want only the commented file", got)
	}
	var n int
	if err := h.pool.QueryRow(ctx, "SELECT count(*) FROM fencegw.replicas").Scan(&n); err != nil || n != 2 {
		t.Errorf("fencegw.replicas holds %d rows (%v) after one of three withdrew, want 2", n, err)
	}
	withdraw(comment)
	if err := h.node.CheckReplicas(ctx, every); err != nil {
		t.Fatal(err)
	}
	if got := policyOf(h); got != "ok" {
		t.Errorf("alone again, the default replica says %q, want ok", got)
	}
}

// withdraw runs x's replica check until it has run once, then stops it:
// a replica shutting down withdraws its entry.
func withdraw(x *harness) {
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); x.node.RunReplicaCheck(ctx, time.Second) }()
	stop()
	<-stopped
}

func withPolicy(t *testing.T, text string) func(*gateway.Config) {
	pol, err := policy.Parse("p.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return func(c *gateway.Config) { c.Policy = pol }
}

// TestAReplicaWithoutFencingIsReported: the same policy file served with
// --unsafe-no-fence disagrees on every stale write, and is named.
func TestAReplicaWithoutFencingIsReported(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, demoPolicy(t, "monotonic"))
	unsafe := h.sibling(func(c *gateway.Config) { c.UnsafeNoFence = true })
	for _, x := range []*harness{unsafe, h} {
		if err := x.node.CheckReplicas(ctx, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	r := h.do(http.MethodGet, "/readyz", nil, "")
	if !strings.Contains(string(r.Body), "1 replica(s) run other fence settings") {
		t.Fatalf("readyz beside a replica without fencing: %d %s", r.Status, r.Body)
	}
}
