package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/torture"
	"github.com/fencegw/fencegw/internal/harness/torture/check"
)

// TestCheckFaultsDone: a run asked for a minimum of failovers or rollbacks,
// or without its late holder's write, that ended without them fails,
// naming what is missing; one that did them, or was asked for none, does
// not.
func TestCheckFaultsDone(t *testing.T) {
	cfg := torture.Config{Duration: time.Minute, Failover: true, MinFailovers: 3, EtcdRollback: true, MinRollbacks: 2}
	for _, tc := range []struct {
		faults map[string]int
		want   string // in the error; "" for none
	}{
		{map[string]int{"failover": 3, "etcd-rollback": 2, "late-holder": 1}, ""},
		{map[string]int{"failover": 5, "etcd-rollback": 4, "late-holder": 3}, ""},
		{map[string]int{"failover": 1, "etcd-rollback": 2, "late-holder": 1}, "short of the faults it asked for: only 1 of the 3 failovers;"},
		{map[string]int{"failover": 3, "late-holder": 1}, "short of the faults it asked for: only 0 of the 2 etcd rollbacks;"},
		{map[string]int{"failover": 3, "etcd-rollback": 2}, "short of the faults it asked for: no late holder's write answered;"},
		{nil, "short of the faults it asked for: only 0 of the 3 failovers; only 0 of the 2 etcd rollbacks; no late holder's write answered;"},
	} {
		err := checkFaultsDone(cfg, tc.faults, nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v, want none", tc.faults, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "4m0s")):
			t.Errorf("%v: %v, want one saying %q and the bound", tc.faults, err, tc.want)
		}
	}
	if err := checkFaultsDone(torture.Config{Duration: time.Minute}, map[string]int{"late-holder": 1}, nil); err != nil {
		t.Errorf("no minimum asked: %v", err)
	}
	async := torture.Config{Duration: time.Minute, Failover: true, AsyncStandby: true}
	if err := checkFaultsDone(async, nil, nil); err != nil {
		t.Errorf("an asynchronous standby's run, whose nemesis writes across failovers instead: %v", err)
	}
}

// TestJudge: a violation with fencing on is reported as such, even when
// the run was also short of faults; a fenced PASS short of faults fails,
// a fault kind it asked for and never had (a member frozen, though other
// etcd faults happened) among them, naming it, where a kind skipped for
// the machine's sake does not fail it; a
// control run that found its violations passes however few faults it
// took, and one that found none says so, and that it was short.
func TestJudge(t *testing.T) {
	short := map[string]int{"failover": 1, "late-holder": 1}
	enough := map[string]int{"failover": 2, "late-holder": 1}
	violation := []check.Violation{{Kind: "stale-write"}}
	fenced := torture.Config{Duration: time.Minute, Failover: true, MinFailovers: 2}
	control := fenced
	control.AsyncStandby = true
	etcd := torture.Config{Duration: time.Minute, EtcdFaults: true}
	ignoring := torture.Config{Duration: time.Minute, Failover: true, BackendFaults: true, UnsafeIgnoreCommitWarnings: true}
	outage := map[string]int{"failover": 1, "standby-outage": 1, "cancel-backend": 1, "terminate-backend": 1, "cancel-commit": 1,
		"statement-timeout": 1, "idle-in-transaction-timeout": 1}
	throttle := torture.Config{Duration: time.Minute, Throttle: true}
	for _, tc := range []struct {
		name   string
		cfg    torture.Config
		report check.Report
		want   []string // in the error; none for nil
	}{
		{"fenced pass", fenced, check.Report{Faults: enough}, nil},
		{"fenced pass short of faults", fenced, check.Report{Faults: short}, []string{"only 1 of the 2 failovers"}},
		{"fenced pass without a fault kind", etcd, check.Report{Faults: map[string]int{"late-holder": 1, "kill-etcd-leader": 2, "kill-etcd-member": 1}},
			[]string{"fault kinds that never happened: pause-etcd-member"}},
		{"fenced pass with a kind skipped", throttle, check.Report{Faults: map[string]int{"late-holder": 1}, Skipped: map[string]string{"throttle-worker": "no cgroup"}}, nil},
		{"fenced violation short of faults", fenced, check.Report{Faults: short, Violations: violation}, []string{"1 violation(s) with fencing on"}},
		{"control found violations short of faults", control, check.Report{Faults: short, Violations: violation}, nil},
		{"control found nothing short of faults", control, check.Report{Faults: short}, []string{"found no violation", "only 1 of the 2 failovers"}},
		{"control found nothing", control, check.Report{Faults: enough}, []string{"found no violation"}},
		{"commit warnings ignored, found violations", ignoring, check.Report{Faults: outage, Violations: violation}, nil},
		{"commit warnings ignored, found nothing", ignoring, check.Report{Faults: outage}, []string{"commit warnings ignored found no violation"}},
	} {
		err := judge(tc.cfg, tc.report)
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v, want nil", tc.name, err)
			}
			continue
		}
		var exit *exitError
		if !errors.As(err, &exit) || exit.code != 1 {
			t.Errorf("%s: %v, want exit 1", tc.name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q, want it to say %q", tc.name, err, w)
			}
		}
	}
}
