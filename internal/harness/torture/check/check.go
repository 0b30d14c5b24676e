package check

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Row is one applied write, read from the log table in commit order of its
// resource (ascending ID: the fence's row lock serialises writers of one
// resource, and the ID is taken inside that lock). A transfer writes one
// row per role, each with its own resource and token, intents X:from and
// X:to.
type Row struct {
	ID       int64  `json:"id"`
	Resource string `json:"resource"`
	Epoch    int64  `json:"epoch"`
	Revision int64  `json:"revision"`
	Intent   string `json:"intent"`
	Worker   int    `json:"worker"`
	Delta    int64  `json:"delta,omitempty"` // what the write added to its resource's balance
	// Txn is the PostgreSQL transaction that applied it (0: not
	// recorded): rows of one write, of a coalesced transaction or of a group
	// commit share it.
	Txn int64 `json:"txn,omitempty"`
}

// Input is what a run left behind: the workers' histories (in any order:
// each worker's events in its own order), every row of the log table, the
// balances if the run kept them, and the runner's account of the faults it
// injected (copied into the Report).
type Input struct {
	History []Event
	Rows    []Row
	Ledger  *Ledger // nil: no balances to check
	Faults  map[string]int
	// Skipped names the faults the runner could not inject here, with
	// why (copied into the Report).
	Skipped map[string]string
	// Strict reports whether a resource's fence is strict (a token
	// writes once: an equal token is stale); nil: every fence is
	// monotonic (an equal token may write again).
	Strict func(resource string) bool
	// Permits reports the semaphore a resource is a permit slot of, and
	// how many permits it has; 0 for any other resource. nil: no
	// semaphores.
	Permits func(resource string) (semaphore string, permits int)
	// Fences are fencegw.fences as read at the end of the run and, in
	// failover runs, after each promotion (checkFences).
	Fences []FenceReading
	// Grants are the leases the holders that keep a log of grants were
	// granted (checkGrants).
	Grants []Grant
	// Churn reports whether a resource is a lease-churn one, where every
	// lease writes once (checkChurn); nil: none is.
	Churn func(resource string) bool
}

// token is the row's fencing token in its text form "E:R".
func (r Row) token() string { return fmt.Sprintf("%d:%d", r.Epoch, r.Revision) }

// compareTokens orders rows by token: epoch first, then revision.
func compareTokens(a, b Row) int {
	return cmp.Or(cmp.Compare(a.Epoch, b.Epoch), cmp.Compare(a.Revision, b.Revision))
}

// Check proves the run safe, or lists how it was not. It does not modify
// its input.
func Check(in Input) Report {
	history, rows, faults := in.History, in.Rows, in.Faults
	c := newChecker(history, rows, in.Strict)
	c.permits = in.Permits
	c.checkOrder()
	c.checkPermits()
	acked := c.checkIntents()
	retries := c.checkKeys()
	c.checkSentTokens()
	c.checkWentBack()
	c.checkTransfers()
	c.checkFences(in.Fences)
	c.checkGrants(in.Grants)
	churn := c.checkChurn(in.Churn, in.Grants)
	leases := c.checkLeaseViews()
	if in.Ledger != nil {
		c.checkLedger(*in.Ledger)
	}
	linearizable := c.checkLinearizable()
	sortViolations(c.violations)

	events := map[string]int{}
	resources := map[string]bool{}
	for _, e := range history {
		events[e.Type]++
		resources[e.Resource] = true
	}
	for _, r := range rows {
		resources[r.Resource] = true
	}
	if faults = maps.Clone(faults); faults == nil {
		faults = map[string]int{}
	}
	return Report{
		Events:       events,
		Rows:         len(rows),
		Resources:    len(resources),
		Faults:       faults,
		Skipped:      maps.Clone(in.Skipped),
		Batching:     sharing(rows),
		FenceReads:   fenceReads(in.Fences),
		Leases:       leases,
		Retries:      retries,
		Churn:        churn,
		Violations:   c.violations,
		Linearizable: linearizable,
		Verdict:      verdict(acked, c.violations, linearizable),
	}
}

type checker struct {
	strict       func(resource string) bool
	permits      func(resource string) (string, int)
	history      []Event
	byIntent     map[string][]int // indices into history, in history order
	rowsByIntent map[string][]Row
	byResource   map[string][]Row // ascending ID
	violations   []Violation
}

func newChecker(history []Event, rows []Row, strict func(string) bool) *checker {
	if strict == nil {
		strict = func(string) bool { return false }
	}
	c := &checker{
		strict:       strict,
		history:      history,
		byIntent:     map[string][]int{},
		rowsByIntent: map[string][]Row{},
		byResource:   map[string][]Row{},
		violations:   []Violation{},
	}
	for i, e := range history {
		c.byIntent[e.Intent] = append(c.byIntent[e.Intent], i)
	}
	// Sort a copy: the caller's order is a promise we rely on only for
	// meaning (ID is commit order), not for layout.
	sorted := slices.Clone(rows)
	slices.SortStableFunc(sorted, func(a, b Row) int { return cmp.Compare(a.ID, b.ID) })
	for _, r := range sorted {
		c.rowsByIntent[r.Intent] = append(c.rowsByIntent[r.Intent], r)
		c.byResource[r.Resource] = append(c.byResource[r.Resource], r)
	}
	return c
}

func (c *checker) report(kind, resource string, rows []Row, intents []string, format string, args ...any) {
	c.violations = append(c.violations, Violation{
		Kind:     kind,
		Resource: resource,
		Message:  fmt.Sprintf(format, args...),
		Rows:     slices.Clone(rows),
		Timeline: c.timeline(intents),
	})
}

// timeline is every event of the intents, by time; history order breaks
// ties, so one worker's events keep their order when its clock is coarse.
func (c *checker) timeline(intents []string) []Event {
	var idx []int
	seen := map[string]bool{}
	for _, in := range intents {
		if !seen[in] {
			seen[in] = true
			idx = append(idx, c.byIntent[in]...)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(c.history[a].Time.Compare(c.history[b].Time), cmp.Compare(a, b))
	})
	out := make([]Event, len(idx))
	for i, j := range idx {
		out[i] = c.history[j]
	}
	return out
}

// outcome sums one intent's history. A worker may retry an intent, so an
// intent may have several invokes, each with at most one outcome.
type outcome struct {
	first                      Event // the intent's first event, for messages
	invokes, oks, fails, infos int
	refusal                    string // " (Detail)" of the last "fail" that had one
	// final is the first refusal of the key for good (Event.finalRefusal),
	// if any.
	final *Event
}

// checkIntents runs the checks that follow one intent from history to
// rows: lost-write, duplicate-intent, refused-but-applied, unknown-intent.
// It returns the number of acknowledged intents.
func (c *checker) checkIntents() (acked int) {
	outcomes := map[string]*outcome{}
	for _, e := range c.history {
		o := outcomes[e.Intent]
		if o == nil {
			o = &outcome{first: e}
			outcomes[e.Intent] = o
		}
		switch e.Type {
		case TypeInvoke:
			o.invokes++
		case TypeOK:
			o.oks++
		case TypeFail:
			o.fails++
			if e.Detail != "" {
				o.refusal = " (" + e.Detail + ")"
			}
			if e.finalRefusal() && o.final == nil {
				o.final = &e
			}
		case TypeInfo:
			o.infos++
		}
	}

	for _, in := range slices.Sorted(maps.Keys(outcomes)) {
		o, rows := outcomes[in], c.rowsByIntent[in]
		if o.oks > 0 {
			acked++
			if len(rows) == 0 {
				c.report(KindLostWrite, o.first.Resource, nil, []string{in},
					"intent %s (worker %d, token %s) was acknowledged but has no row", in, o.first.Worker, o.first.Token)
			}
		}
		// A row is explained by any attempt that was not definitely
		// refused, including an invoke whose outcome the worker never
		// recorded: only when every attempt was refused is a row wrong,
		// or when one refused the key for good — its outcome, which no
		// attempt with the key may apply after, were it in flight then.
		switch {
		case len(rows) == 0:
		case o.final != nil && (o.oks > 0 || o.infos > 0 || o.fails < o.invokes):
			c.report(KindRefusedButApplied, rows[0].Resource, rows, []string{in},
				"intent %s (worker %d) was refused for good, %s%s, but %s applied it",
				in, o.first.Worker, answerText(*o.final), attemptText(*o.final), rowIDs(rows))
		case o.final != nil || o.invokes > 0 && o.oks == 0 && o.infos == 0 && o.fails >= o.invokes:
			c.report(KindRefusedButApplied, rows[0].Resource, rows, []string{in},
				"intent %s (worker %d) was refused%s but %s applied it", in, o.first.Worker, o.refusal, rowIDs(rows))
		}
	}

	for _, in := range slices.Sorted(maps.Keys(c.rowsByIntent)) {
		rows := c.rowsByIntent[in]
		if len(rows) > 1 {
			c.report(KindDuplicateIntent, rows[0].Resource, rows, []string{in},
				"intent %s was applied %d times: %s", in, len(rows), rowIDs(rows))
		}
		if o := outcomes[in]; o == nil || o.invokes == 0 {
			c.report(KindUnknownIntent, rows[0].Resource, rows, []string{in},
				"%s (worker %d, token %s) carries intent %q that no worker invoked", rowIDs(rows), rows[0].Worker, rows[0].token(), in)
		}
	}
	return acked
}

// rowIDs names rows for a message: "row 4" or "rows 4, 7".
func rowIDs(rows []Row) string {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = fmt.Sprint(r.ID)
	}
	if len(rows) == 1 {
		return "row " + ids[0]
	}
	return "rows " + strings.Join(ids, ", ")
}
