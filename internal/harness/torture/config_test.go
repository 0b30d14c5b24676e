package torture

import (
	"maps"
	"testing"
)

// TestCheckMinimumFaults: --min-failovers and --min-rollbacks ask the run
// to go on until the nemesis did that many, so each needs its fault mode
// and neither may be negative; the run is refused before anything starts.
func TestCheckMinimumFaults(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*Config)
		ok     bool
	}{
		{"defaults", func(*Config) {}, true},
		{"failovers with --failover", func(c *Config) { c.Failover, c.MinFailovers = true, 2 }, true},
		{"rollbacks with --etcd-rollback", func(c *Config) { c.EtcdRollback, c.MinRollbacks = true, 1 }, true},
		{"failovers without --failover", func(c *Config) { c.MinFailovers = 1 }, false},
		{"rollbacks without --etcd-rollback", func(c *Config) { c.MinRollbacks = 1 }, false},
		{"negative failovers", func(c *Config) { c.Failover, c.MinFailovers = true, -1 }, false},
		{"negative rollbacks", func(c *Config) { c.EtcdRollback, c.MinRollbacks = true, -1 }, false},
		{"semaphores", func(c *Config) { c.Semaphores = 50 }, true},
		{"negative semaphores", func(c *Config) { c.Semaphores = -1 }, false},
		{"semaphores and strict over 100", func(c *Config) { c.Strict, c.Semaphores = 50, 51 }, false},
		{"lease-churn workers only", func(c *Config) { c.Workers, c.LeaseChurn = 0, 4 }, true},
		{"no worker of either kind", func(c *Config) { c.Workers = 0 }, false},
		{"lease churn on no resource", func(c *Config) { c.LeaseChurn, c.ChurnResources = 4, 0 }, false},
		{"commit warnings ignored with failovers", func(c *Config) { c.Failover, c.UnsafeIgnoreCommitWarnings = true, true }, true},
		{"commit warnings ignored without failovers", func(c *Config) { c.UnsafeIgnoreCommitWarnings = true }, false},
		{"commit warnings ignored without backend faults", func(c *Config) { c.Failover, c.UnsafeIgnoreCommitWarnings, c.BackendFaults = true, true, false }, false},
		{"commit warnings ignored and an asynchronous standby", func(c *Config) { c.Failover, c.UnsafeIgnoreCommitWarnings, c.AsyncStandby = true, true, true }, false},
	} {
		c := Defaults()
		tt.change(&c)
		if err := c.Check(); (err == nil) != tt.ok {
			t.Errorf("%s: Check() = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

// TestFaultsMissingLateHolder: a run without an asynchronous standby is
// not done before the late holder's write was answered once, nor, with
// semaphores, the late permit holder's; with one, or with commit warnings
// ignored, the nemesis's writes belong to the failovers instead, and the
// latter is not done before a standby outage was followed by one.
func TestFaultsMissingLateHolder(t *testing.T) {
	c := Config{}
	if got := c.FaultsMissing(nil, nil); len(got) != 1 {
		t.Fatalf("before any fault: missing %q, want the late holder's write", got)
	}
	if got := c.FaultsMissing(map[string]int{"late-holder": 1}, nil); len(got) != 0 {
		t.Fatalf("after one late write: missing %q, want nothing", got)
	}
	c.Semaphores = 50
	if got := c.FaultsMissing(map[string]int{"late-holder": 1}, nil); len(got) != 1 || got[0] != "no late permit holder's write answered" {
		t.Fatalf("with semaphores, after the late holder's write only: missing %q, want the late permit holder's", got)
	}
	if got := c.FaultsMissing(map[string]int{"late-holder": 1, "late-permit-holder": 1}, nil); len(got) != 0 {
		t.Fatalf("with semaphores, after both late writes: missing %q, want nothing", got)
	}
	c.Failover, c.AsyncStandby = true, true
	if got := c.FaultsMissing(nil, nil); len(got) != 0 {
		t.Fatalf("with an asynchronous standby: missing %q, want nothing", got)
	}
	c.AsyncStandby, c.BackendFaults, c.UnsafeIgnoreCommitWarnings = false, true, true
	backend := map[string]int{"cancel-backend": 1, "terminate-backend": 1, "cancel-commit": 1, "statement-timeout": 1, "idle-in-transaction-timeout": 1}
	if got := c.FaultsMissing(backend, nil); len(got) != 1 || got[0] != "no standby outage followed by a failover" {
		t.Fatalf("commit warnings ignored: missing %q, want the standby outage alone", got)
	}
	backend["standby-outage"] = 1
	if got := c.FaultsMissing(backend, nil); len(got) != 0 {
		t.Fatalf("commit warnings ignored, after a standby outage: missing %q, want nothing", got)
	}
}

// TestFaultsMissingKinds: a run is not done before every kind of fault it
// asks for happened once, a kind skipped on this machine aside; no kind
// stands in for another: an etcd follower killed is neither the leader
// killed nor a member frozen (two runs without a member frozen passed
// while one counted for all three).
func TestFaultsMissingKinds(t *testing.T) {
	c := Defaults()
	all := map[string]int{"late-holder": 1}
	for _, k := range c.kinds(nil) {
		all[k.name] = 1
	}
	if got := c.FaultsMissing(all, nil); len(got) != 0 {
		t.Fatalf("every kind done: missing %q", got)
	}
	for _, tt := range []struct {
		name    string
		without []string
		skipped map[string]string
		want    string
	}{
		{"a suspend and a throttle", []string{"suspend-worker", "throttle-worker"}, nil, "fault kinds that never happened: suspend-worker, throttle-worker"},
		{"the throttle skipped", []string{"suspend-worker", "throttle-worker"}, map[string]string{"throttle-worker": "no cgroup"}, "fault kinds that never happened: suspend-worker"},
		{"only a follower killed", []string{"kill-etcd-leader", "pause-etcd-member"}, nil, "fault kinds that never happened: kill-etcd-leader, pause-etcd-member"},
		{"no member frozen", []string{"pause-etcd-member"}, nil, "fault kinds that never happened: pause-etcd-member"},
	} {
		faults := maps.Clone(all)
		for _, k := range tt.without {
			delete(faults, k)
		}
		if got := c.FaultsMissing(faults, tt.skipped); len(got) != 1 || got[0] != tt.want {
			t.Errorf("%s: missing %q, want %q", tt.name, got, tt.want)
		}
	}
	c.ClockFaults, c.Throttle, c.EtcdFaults = false, false, false
	none := maps.Clone(all)
	for _, k := range []string{"suspend-worker", "throttle-worker", "kill-etcd-leader", "kill-etcd-member", "pause-etcd-member"} {
		delete(none, k)
	}
	if got := c.FaultsMissing(none, nil); len(got) != 0 {
		t.Fatalf("kinds not asked for: missing %q", got)
	}
	// Lease-churn workers, alone: paused, and a late holder of their
	// resources once at least.
	c.Workers, c.LeaseChurn = 0, 2
	if got, want := c.FaultsMissing(none, nil), "fault kinds that never happened: late-churn-holder"; len(got) != 1 || got[0] != want {
		t.Fatalf("lease churn without a late churn holder: missing %q, want %q", got, want)
	}
	none["late-churn-holder"] = 1
	if got := c.FaultsMissing(none, nil); len(got) != 0 {
		t.Fatalf("lease churn with a late churn holder: missing %q", got)
	}
}
