package check

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The kinds of Violation.
const (
	KindStaleWrite        = "stale-write"
	KindLostWrite         = "lost-write"
	KindDuplicateIntent   = "duplicate-intent"
	KindRefusedButApplied = "refused-but-applied"
	KindUnknownIntent     = "unknown-intent"
	// KindNotLinearizable is in linearizable.go, KindTooManyHolders in
	// permits.go, KindGrantNotNewer in grants.go, KindTokenReused in
	// churn.go.
)

// Violation is one way the run was unsafe, with the rows and history that
// show it.
type Violation struct {
	Kind     string  `json:"kind"` // "stale-write", "fence-went-back", "fence-below-applied", "fence-below-acknowledged", "answers-disagree", "replay-differs", "lost-write", "duplicate-intent", "refused-but-applied", "unknown-intent", "wrong-token", "expiry-unnoticed", "not-linearizable", "torn-transfer", "not-conserved", "too-many-holders", "grant-not-newer", "token-reused"
	Resource string  `json:"resource,omitempty"`
	Message  string  `json:"message"`
	Rows     []Row   `json:"rows,omitempty"`     // the rows involved
	Timeline []Event `json:"timeline,omitempty"` // the history events of the intents involved, in time order
}

// Report is the checker's result for one run.
type Report struct {
	Events    map[string]int `json:"events"` // count by Type
	Rows      int            `json:"rows"`
	Resources int            `json:"resources"` // distinct resources in the history and the rows
	Faults    map[string]int `json:"faults"`    // passed in by the runner: faults injected by type
	// Skipped, passed in by the runner: faults it was asked for but
	// could not inject on this machine, and why.
	Skipped map[string]string `json:"skipped,omitempty"`
	// Batching: how the applied writes shared transactions (nil when the
	// rows do not say their transaction).
	Batching *Batching `json:"batching,omitempty"`
	// Retries counts what the workers' retries under a write's key
	// covered (checkKeys): attempts sent again, those sent while an
	// earlier one was in flight, answers replayed, writes whose unknown
	// outcome a retry settled; nil when no write was retried.
	Retries map[string]int `json:"retries,omitempty"`
	// FenceReads names the readings of fencegw.fences the checker held
	// to the log and the acknowledgements (checkFences), e.g. "the end,
	// after failover 1"; "" when none was read.
	FenceReads string `json:"fence_reads,omitempty"`
	// Leases counts what the workers' clients said of their leases as
	// writes were sent (checkLeaseViews); nil when none was recorded.
	Leases map[string]int `json:"leases,omitempty"`
	// Churn counts what the lease-churn holders did (checkChurn): grants,
	// by how each holder meant to let its lease go, writes applied and
	// refused as stale, resources written; nil without churn.
	Churn      map[string]int `json:"churn,omitempty"`
	Violations []Violation    `json:"violations"` // never nil in JSON: [] when none
	// Linearizable is porcupine's verdict on the fenced writes, per
	// resource: "ok", "violated", or "unknown" when its search timed out.
	Linearizable string `json:"linearizable,omitempty"`
	Verdict      string `json:"verdict"` // one line, e.g. "PASS: 1234 acknowledged writes, 0 violations" or "FAIL: 3 violations (2 stale-write, 1 lost-write)"
}

// OK reports whether the run showed no violation. A run that acknowledged
// no write passes vacuously; the Verdict says how many writes it proved.
func (r Report) OK() bool { return len(r.Violations) == 0 }

// MarshalJSON keeps the documented shape for a Report built by hand too:
// consumers of the JSON test "violations" for emptiness, not for null.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report // without the method, so Marshal does not recurse
	p := plain(r)
	if p.Violations == nil {
		p.Violations = []Violation{}
	}
	if p.Events == nil {
		p.Events = map[string]int{}
	}
	if p.Faults == nil {
		p.Faults = map[string]int{}
	}
	return json.Marshal(p)
}

// sortViolations orders vs by kind, resource and first row ID; the message
// breaks the remaining ties, so one input always yields one Report.
func sortViolations(vs []Violation) {
	slices.SortStableFunc(vs, func(a, b Violation) int {
		return cmp.Or(
			cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Resource, b.Resource),
			cmp.Compare(firstID(a), firstID(b)),
			cmp.Compare(a.Message, b.Message),
		)
	})
}

func firstID(v Violation) int64 {
	if len(v.Rows) == 0 {
		return 0
	}
	return v.Rows[0].ID
}

// verdict is the Report's one line: the acknowledged writes it proved safe,
// or the violations by kind, most frequent first.
func verdict(acked int, vs []Violation, linearizable string) string {
	if len(vs) == 0 {
		v := fmt.Sprintf("PASS: %d acknowledged writes, 0 violations", acked)
		if linearizable == "unknown" {
			v += " (linearizability not settled: porcupine timed out)"
		}
		return v
	}
	byKind := map[string]int{}
	for _, v := range vs {
		byKind[v.Kind]++
	}
	kinds := slices.SortedFunc(maps.Keys(byKind), func(a, b string) int {
		return cmp.Or(cmp.Compare(byKind[b], byKind[a]), cmp.Compare(a, b))
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", byKind[k], k)
	}
	noun := "violations"
	if len(vs) == 1 {
		noun = "violation"
	}
	return fmt.Sprintf("FAIL: %d %s (%s)", len(vs), noun, strings.Join(parts, ", "))
}
