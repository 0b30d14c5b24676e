package gateway_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// appliedRow is one row of inv.applied: a write (a move's role) that
// committed.
type appliedRow struct {
	op, resource string
	token        tokens.Token
	seq          int64
	at           time.Time
}

// invState is what the database holds after the run.
type invState struct {
	applied  map[string][]appliedRow // by op id
	byRes    map[string][]appliedRow // by resource, in seq order
	fences   map[string]tokens.Token
	touched  map[string][]string // tag op -> accounts its deferred work wrote
	tagOwner map[string]string   // tag op -> its account
}

func (r *invariantRun) readState() invState {
	ctx := context.Background()
	st := invState{applied: map[string][]appliedRow{}, byRes: map[string][]appliedRow{}, fences: map[string]tokens.Token{},
		touched: map[string][]string{}, tagOwner: map[string]string{}}
	rows, err := r.h.pool.Query(ctx, "SELECT op, resource, epoch, revision, seq, at FROM inv.applied ORDER BY resource, seq")
	if err != nil {
		r.t.Fatal(err)
	}
	for rows.Next() {
		var a appliedRow
		if err := rows.Scan(&a.op, &a.resource, &a.token.Epoch, &a.token.Revision, &a.seq, &a.at); err != nil {
			r.t.Fatal(err)
		}
		st.applied[a.op] = append(st.applied[a.op], a)
		st.byRes[a.resource] = append(st.byRes[a.resource], a)
	}
	if rows.Err() != nil {
		r.t.Fatal(rows.Err())
	}
	r.scan("SELECT resource, epoch, revision FROM fencegw.fences", func(rows scanner) error {
		var res string
		var t tokens.Token
		err := rows.Scan(&res, &t.Epoch, &t.Revision)
		st.fences[res] = t
		return err
	})
	r.scan("SELECT op, account FROM inv.touched", func(rows scanner) error {
		var op, account string
		err := rows.Scan(&op, &account)
		st.touched[op] = append(st.touched[op], account)
		return err
	})
	r.scan("SELECT op, account FROM inv.tags", func(rows scanner) error {
		var op, account string
		err := rows.Scan(&op, &account)
		st.tagOwner[op] = account
		return err
	})
	return st
}

type scanner interface{ Scan(...any) error }

func (r *invariantRun) scan(sql string, each func(scanner) error) {
	rows, err := r.h.pool.Query(context.Background(), sql)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			r.t.Fatal(err)
		}
	}
	if rows.Err() != nil {
		r.t.Fatal(rows.Err())
	}
}

// check holds every answer of the run against the database, and the
// database against the fence's rule. Each broken invariant is reported
// with the operation and its answers.
func (r *invariantRun) check() {
	st := r.readState()
	var violations []string
	report := func(op *invOp, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if op != nil {
			msg += "\n" + op.describe()
		}
		violations = append(violations, msg)
	}
	counts := map[string]int{}
	for _, op := range r.ops {
		r.checkOp(op, st, report)
		for _, a := range op.attempts {
			counts[fmt.Sprintf("%d %s %s", a.status, a.kind, a.outcome)]++
		}
	}
	r.checkFences(st, report)
	r.checkTags(st, report)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range counts {
			if !yield(k) {
				return
			}
		}
	})
	var summary []string
	for _, k := range keys {
		summary = append(summary, fmt.Sprintf("%s: %d", strings.TrimSpace(k), counts[k]))
	}
	r.t.Logf("%d operations; answers: %s", len(r.ops), strings.Join(summary, ", "))
	for i, v := range violations {
		if i == 30 {
			r.t.Errorf("... and %d more", len(violations)-30)
			break
		}
		r.t.Error(v)
	}
}

// checkOp: an operation's writes are applied all or none, at most once;
// a 200 means applied, a refusal (4xx) or a 503 not-applied means not
// applied; a key's final answers agree, byte for byte, and a keyed write
// is never told not-applied; a stale-token refusal names a fence some
// write had committed before the refusal was answered.
func (r *invariantRun) checkOp(op *invOp, st invState, report func(*invOp, string, ...any)) {
	n := -1
	for _, w := range op.writes {
		for _, id := range w.applied {
			c := len(st.applied[id])
			if c > 1 {
				report(op, "%s: %s applied %d times", op.id, id, c)
			}
			if n >= 0 && c != n {
				report(op, "%s: applied in part: %s %d times, another part %d", op.id, id, c, n)
			}
			n = c
		}
	}
	var first *invAttempt
	for i := range op.attempts {
		a := &op.attempts[i]
		switch {
		case a.status == http.StatusOK && n != 1:
			report(op, "%s: answered 200 (%s), applied %d times", op.id, a.via, n)
		case a.status >= 400 && a.status < 500 && n != 0:
			report(op, "%s: answered %d %s (%s), but applied", op.id, a.status, a.kind, a.via)
		case a.status == http.StatusServiceUnavailable && a.outcome == "not-applied" && n != 0:
			report(op, "%s: answered 503 not-applied (%s), but applied", op.id, a.via)
		case a.status == http.StatusServiceUnavailable && a.outcome == "not-applied" && op.key != "":
			report(op, "%s: a keyed write answered 503 not-applied (%s): an earlier attempt with its key may still apply", op.id, a.via)
		case a.status != http.StatusOK && a.status != http.StatusServiceUnavailable && (a.status < 400 || a.status >= 500):
			report(op, "%s: answered %d (%s)", op.id, a.status, a.via)
		}
		if a.kind == "stale-token" && !a.replayed {
			r.checkStale(op, a, st, report)
		}
		if op.key == "" || !a.final() {
			continue
		}
		if first == nil {
			first = a
		} else if a.status != first.status || !bytes.Equal(a.body, first.body) {
			report(op, "%s: the key's answers disagree: %d (%s) and %d (%s)", op.id, first.status, first.via, a.status, a.via)
		}
	}
	if op.trespass && n != 0 {
		report(op, "%s: a tag whose deferred work writes another account's guarded row was applied", op.id)
	}
}

// checkStale: the fence that refused a stale token had been committed by
// some write when the refusal was answered. A refusal judged against a
// write of the same transaction whose COMMIT was then lost names a token
// no committed write had yet.
func (r *invariantRun) checkStale(op *invOp, a *invAttempt, st invState, report func(*invOp, string, ...any)) {
	cur, err := tokens.Parse(a.current)
	if err != nil {
		report(op, "%s: a stale-token refusal without a current token (%s)", op.id, a.via)
		return
	}
	for _, w := range st.byRes[a.resource] {
		if w.token.Compare(cur) == 0 && w.at.Before(a.answered) {
			return
		}
	}
	report(op, "%s: refused as stale against %s of %s, which no write of it had committed by then (%s)", op.id, cur, a.resource, a.via)
}

// checkFences: each fence is the newest token of its resource's applied
// writes, and in commit order the tokens never go backwards (monotonic)
// or repeat (strict).
func (r *invariantRun) checkFences(st invState, report func(*invOp, string, ...any)) {
	for res, rows := range st.byRes {
		newest := slices.MaxFunc(rows, func(a, b appliedRow) int { return a.token.Compare(b.token) }).token
		if f, ok := st.fences[res]; !ok || f.Compare(newest) != 0 {
			report(nil, "%s: fence %s, want %s, the newest token of its applied writes", res, f, newest)
		}
		strict := strings.HasPrefix(res, "slot/")
		for i := 1; i < len(rows); i++ {
			prev, cur := rows[i-1], rows[i]
			switch c := cmp.Compare(prev.seq, cur.seq); {
			case c == 0:
				report(nil, "%s: writes %s and %s share place %d", res, prev.op, cur.op, cur.seq)
			case cur.token.Compare(prev.token) < 0 || (strict && cur.token.Compare(prev.token) == 0):
				report(nil, "%s: %s with %s committed after %s with %s", res, cur.op, cur.token, prev.op, prev.token)
			}
		}
	}
	for res := range st.fences {
		if _, ok := st.byRes[res]; !ok {
			report(nil, "%s: a fence without any applied write", res)
		}
	}
}

// checkTags: deferred work wrote only its own tag's account.
func (r *invariantRun) checkTags(st invState, report func(*invOp, string, ...any)) {
	for op, accounts := range st.touched {
		for _, a := range accounts {
			if a != st.tagOwner[op] {
				report(nil, "tag %s of %s: its deferred work wrote %s's guarded row", op, st.tagOwner[op], a)
			}
		}
	}
}

// describe is op with its answers, for a report.
func (op *invOp) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %s key=%q batch=%v trespass=%v\n", op.id, op.key, op.batch, op.trespass)
	for _, w := range op.writes {
		fmt.Fprintf(&b, "    %s %v tokens %v\n", w.operation, w.args, w.tokens)
	}
	for _, a := range op.attempts {
		fmt.Fprintf(&b, "    %s at %s: %d replayed=%v %s\n", a.via, a.answered.Format("15:04:05.000000"), a.status, a.replayed, bytes.TrimSpace(a.body))
	}
	return b.String()
}
