package check

import (
	"maps"
	"slices"
	"testing"
)

// viewed is write(...) with a lease view on its invoke.
func viewed(sec, worker int, outcome, intent, res, token string, v LeaseView) []Event {
	w := write(sec, worker, outcome, intent, res, token)
	w[0].Lease = v
	return w
}

// TestLeaseViews: a client that calls its lease valid with either clock
// past the local deadline broke its promise, whatever became of the
// write; one that said expired or lost did not, and a view inside the
// deadline is no evidence either way. The counts say which clock alone
// saw the deadline pass: a suspend (the monotonic clock stood still) and
// a wall clock stepped back (the wall clock says there is time left).
func TestLeaseViews(t *testing.T) {
	suspended := LeaseView{Said: LeaseExpired, WallLeftMs: -1800, MonoLeftMs: 300, SuspendedMs: 2500}
	history := concat(
		viewed(0, 1, TypeOK, "in-time", "r", "1:10", LeaseView{Said: LeaseValid, WallLeftMs: 400, MonoLeftMs: 400}),
		viewed(2, 1, TypeFail, "after-suspend", "r", "1:10", suspended),
		viewed(4, 2, TypeOK, "stepped-back", "r", "1:12", LeaseView{Said: LeaseExpired, WallLeftMs: 2600, MonoLeftMs: -100, WallJumpMs: -3000}),
		viewed(6, 2, TypeFail, "lost", "r", "1:12", LeaseView{Said: LeaseLost, WallLeftMs: -5, MonoLeftMs: -5}),
		write(8, 3, TypeOK, "unviewed", "r", "1:13"),
	)
	rows := []Row{row(1, "r", 1, 10, "in-time", 1), row(2, "r", 1, 12, "stepped-back", 2), row(3, "r", 1, 13, "unviewed", 3)}
	got := Check(Input{History: history, Rows: rows})
	if !got.OK() {
		t.Fatalf("a client that kept its promise: %+v", got.Violations)
	}
	want := map[string]int{"checked": 4, "said-expired": 2, "said-lost": 1, "past-on-wall-clock-only": 1,
		"past-on-monotonic-clock-only": 1, "after-suspend": 1, "wall-clock-stepped": 1}
	if !maps.Equal(got.Leases, want) {
		t.Errorf("Leases = %v, want %v", got.Leases, want)
	}

	// The same writes from a client that judged by one clock only.
	for _, tt := range []struct {
		name   string
		intent string
	}{
		{"monotonic clock only: the suspend went unnoticed", "after-suspend"},
		{"wall clock only: the step back extended the lease", "stepped-back"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			broken := slices.Clone(history)
			for i := range broken {
				if broken[i].Intent == tt.intent && broken[i].Type == TypeInvoke {
					broken[i].Lease.Said = LeaseValid
				}
			}
			got := Check(Input{History: broken, Rows: rows})
			if s := summarize(got.Violations); len(s) != 1 || s[0].Kind != KindExpiryUnnoticed {
				t.Fatalf("violations = %+v, want one %s", s, KindExpiryUnnoticed)
			}
			t.Log(got.Violations[0].Message)
		})
	}
	if r := Check(Input{History: write(0, 1, TypeOK, "a", "r", "1:1"), Rows: []Row{row(1, "r", 1, 1, "a", 1)}}); r.Leases != nil {
		t.Errorf("a run without views: Leases = %v, want nil", r.Leases)
	}
}
