package check

import (
	"maps"
	"slices"
	"strings"
)

// The kinds of Violation about transfers and balances.
const (
	// KindTornTransfer: one role of a transfer was applied and the other
	// was not: the transaction was not atomic.
	KindTornTransfer = "torn-transfer"
	// KindNotConserved: a resource's balance is not its initial balance
	// plus what its applied writes added: money was made or lost.
	KindNotConserved = "not-conserved"
)

// Ledger is every resource's balance at the end of a run, and what each
// started with.
type Ledger struct {
	Initial  int64
	Balances map[string]int64
}

// transferRoles are the suffixes of a transfer's two intents.
var transferRoles = [...]string{":from", ":to"}

// checkTransfers finds transfers applied on one side only: each role's
// rows are written in one transaction, so both or neither must exist.
func (c *checker) checkTransfers() {
	bases := map[string]bool{}
	for in := range c.byIntent {
		for _, suffix := range transferRoles {
			if base, ok := strings.CutSuffix(in, suffix); ok {
				bases[base] = true
			}
		}
	}
	for _, base := range slices.Sorted(maps.Keys(bases)) {
		from, to := c.rowsByIntent[base+":from"], c.rowsByIntent[base+":to"]
		if (len(from) == 0) != (len(to) == 0) {
			rows := append(slices.Clone(from), to...)
			c.report(KindTornTransfer, rows[0].Resource, rows, []string{base + ":from", base + ":to"},
				"transfer %s was applied on one side only: %s", base, rowIDs(rows))
		}
	}
}

// checkLedger holds each balance to the rows: a write changes its
// resource's balance and appends its row in one transaction, so the
// balance must be the initial one plus the deltas of the resource's rows,
// and the sum over all resources the initial total plus every delta.
func (c *checker) checkLedger(l Ledger) {
	for _, res := range slices.Sorted(maps.Keys(l.Balances)) {
		var sum int64
		for _, r := range c.byResource[res] {
			sum += r.Delta
		}
		if got := l.Balances[res]; got != l.Initial+sum {
			c.report(KindNotConserved, res, nil, nil,
				"%s holds %d, but started at %d and its %d applied writes add %d", res, got, l.Initial, len(c.byResource[res]), sum)
		}
	}
	for res := range c.byResource {
		if _, ok := l.Balances[res]; !ok {
			c.report(KindNotConserved, res, c.byResource[res], nil, "%s has rows but no balance", res)
		}
	}
}
