package check

import (
	"fmt"
	"strings"
)

// Batching is how the run's applied writes shared transactions, read from
// the rows' transaction IDs: coalescing (one resource's writes) and group
// commit (several resources') put several writes in one transaction, and
// a run meant to exercise them shows whether they carried the load.
type Batching struct {
	Writes       int `json:"writes"`       // applied writes; a transfer's two rows are one write
	Transactions int `json:"transactions"` // transactions that applied them
	Shared       int `json:"shared"`       // writes applied in a transaction with at least one other write
}

func (b Batching) String() string {
	if b.Transactions == 0 {
		return "no writes applied"
	}
	return fmt.Sprintf("%d writes in %d transactions (%.1f per transaction), %d%% of them sharing one",
		b.Writes, b.Transactions, float64(b.Writes)/float64(b.Transactions), 100*b.Shared/max(b.Writes, 1))
}

// sharing counts rows by transaction; nil without rows, or if a row
// does not say its transaction (a log table without the column).
func sharing(rows []Row) *Batching {
	if len(rows) == 0 {
		return nil
	}
	writes := map[int64]map[string]bool{} // by transaction, the writes' intents
	for _, r := range rows {
		if r.Txn == 0 {
			return nil
		}
		if writes[r.Txn] == nil {
			writes[r.Txn] = map[string]bool{}
		}
		writes[r.Txn][transferBase(r.Intent)] = true
	}
	b := &Batching{Transactions: len(writes)}
	for _, in := range writes {
		b.Writes += len(in)
		if len(in) > 1 {
			b.Shared += len(in)
		}
	}
	return b
}

// transferBase is a transfer's intent for one of its roles' rows, and
// any other intent as it is.
func transferBase(intent string) string {
	for _, suffix := range transferRoles {
		if base, ok := strings.CutSuffix(intent, suffix); ok {
			return base
		}
	}
	return intent
}
