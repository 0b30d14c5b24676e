//go:build linux

package recon_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// entriesPerRun is what the reconcile job posts for a day by default.
const entriesPerRun = 20

// ledger is the day's entries and its finished run, as the database has
// them.
type ledger struct {
	run      string         // token of the finished run; "" if none
	runCount int            // entries the run recorded
	runTotal int64          // cents the run recorded
	entries  int            // entries in the ledger
	total    int64          // their cents
	entryNos map[int]int    // entry number: how many entries have it
	byToken  map[string]int // token: how many entries it posted
}

func readLedger(t *testing.T, pool *pgxpool.Pool) ledger {
	t.Helper()
	l := ledger{entryNos: map[int]int{}, byToken: map[string]int{}}
	rows, err := pool.Query(t.Context(), "SELECT entry_no, amount_cents, epoch || ':' || revision FROM recon.ledger WHERE day = $1", day)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var no int
		var cents int64
		var token string
		if err := rows.Scan(&no, &cents, &token); err != nil {
			t.Fatal(err)
		}
		l.entries++
		l.total += cents
		l.entryNos[no]++
		l.byToken[token]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	err = pool.QueryRow(t.Context(), "SELECT epoch || ':' || revision, entries, total_cents FROM recon.runs WHERE day = $1", day).
		Scan(&l.run, &l.runCount, &l.runTotal)
	if err != nil {
		t.Fatalf("the day's run: %v", err)
	}
	return l
}

// oneRun says how the ledger differs from exactly one run's entries: the
// finished run's, all of them, each once, and none of the frozen holder's.
func (l ledger) oneRun(frozenToken string) error {
	var problems []string
	if l.run == frozenToken {
		problems = append(problems, "the frozen holder finished the day")
	}
	if l.entries != entriesPerRun || l.runCount != entriesPerRun || l.byToken[l.run] != entriesPerRun {
		problems = append(problems, fmt.Sprintf("%d entries, %d of them the finished run's, which recorded %d; want %d",
			l.entries, l.byToken[l.run], l.runCount, entriesPerRun))
	}
	var notOnce []int
	for no := 1; no <= entriesPerRun; no++ {
		if l.entryNos[no] != 1 {
			notOnce = append(notOnce, no)
		}
	}
	if len(notOnce) > 0 {
		problems = append(problems, fmt.Sprintf("entries %v recorded other than once", notOnce))
	}
	if n := l.byToken[frozenToken]; n > 0 {
		problems = append(problems, fmt.Sprintf("%d entries of the frozen holder's token %s", n, frozenToken))
	}
	if l.total != l.runTotal {
		problems = append(problems, fmt.Sprintf("the entries sum to %d cents, the run recorded %d", l.total, l.runTotal))
	}
	if len(problems) > 0 {
		return fmt.Errorf("not one run's entries: %s", strings.Join(problems, "; "))
	}
	return nil
}
