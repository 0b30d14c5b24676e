package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// t0 is an arbitrary start; ev numbers events by their offset from it so
// that tests read as a timeline.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func ev(sec, worker int, typ, intent, res, token string) Event {
	return Event{Time: t0.Add(time.Duration(sec) * time.Second), Worker: worker, Type: typ, Intent: intent, Resource: res, Token: token}
}

// write is the history of one attempt: invoke at sec, outcome at sec+1.
func write(sec, worker int, outcome, intent, res, token string) []Event {
	return []Event{ev(sec, worker, TypeInvoke, intent, res, token), ev(sec+1, worker, outcome, intent, res, token)}
}

func row(id int64, res string, epoch, rev int64, intent string, worker int) Row {
	return Row{ID: id, Resource: res, Epoch: epoch, Revision: rev, Intent: intent, Worker: worker}
}

func concat(parts ...[]Event) []Event { return slices.Concat(parts...) }

// found is a violation reduced to what the tests pin down.
type found struct {
	Kind     string
	Resource string
	Rows     string // IDs, comma separated
}

func summarize(vs []Violation) []found {
	out := []found{}
	for _, v := range vs {
		ids := make([]string, len(v.Rows))
		for i, r := range v.Rows {
			ids[i] = fmt.Sprint(r.ID)
		}
		out = append(out, found{v.Kind, v.Resource, strings.Join(ids, ",")})
	}
	return out
}

// summarizeKinds is summarize of the violations of kinds only.
func summarizeKinds(vs []Violation, kinds ...string) []found {
	return summarize(slices.DeleteFunc(slices.Clone(vs), func(v Violation) bool { return !slices.Contains(kinds, v.Kind) }))
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		history []Event
		rows    []Row
		want    []found
	}{
		{
			name: "clean: holders in token order, a refusal, an unknown outcome that landed",
			history: concat(
				write(0, 1, TypeOK, "a1", "r", "1:10"),
				write(2, 1, TypeOK, "a2", "r", "1:10"),
				write(4, 2, TypeOK, "b1", "r", "1:12"),
				write(6, 1, TypeFail, "a3", "r", "1:10"),
				write(8, 2, TypeInfo, "b2", "r", "1:12"),
				write(10, 2, TypeInfo, "b3", "r", "1:12"),
				write(12, 3, TypeOK, "c1", "s", "2:1"),
			),
			rows: []Row{
				row(1, "r", 1, 10, "a1", 1),
				row(2, "r", 1, 10, "a2", 1),
				row(3, "r", 1, 12, "b1", 2),
				row(4, "r", 1, 12, "b2", 2),
				row(5, "s", 2, 1, "c1", 3),
			},
			want: []found{},
		},
		{
			name:    "empty run",
			history: nil,
			rows:    nil,
			want:    []found{},
		},
		{
			name: "epoch outranks revision",
			history: concat(
				write(0, 1, TypeOK, "a", "r", "1:99"),
				write(2, 2, TypeOK, "b", "r", "2:3"),
			),
			rows: []Row{row(1, "r", 1, 99, "a", 1), row(2, "r", 2, 3, "b", 2)},
			want: []found{},
		},
		{
			name: "stale-write: a lower revision lands after a higher one",
			history: concat(
				write(0, 2, TypeOK, "b", "r", "1:12"),
				write(2, 1, TypeOK, "a", "r", "1:10"),
			),
			rows: []Row{row(1, "r", 1, 12, "b", 2), row(2, "r", 1, 10, "a", 1)},
			want: []found{{KindNotLinearizable, "r", ""}, {KindStaleWrite, "r", "1,2"}},
		},
		{
			name: "stale-write: a lower epoch lands after a higher one, rows given out of order",
			history: concat(
				write(0, 2, TypeOK, "b", "r", "2:1"),
				write(2, 1, TypeOK, "a", "r", "1:50"),
			),
			rows: []Row{row(7, "r", 1, 50, "a", 1), row(3, "r", 2, 1, "b", 2)},
			want: []found{{KindNotLinearizable, "r", ""}, {KindStaleWrite, "r", "3,7"}},
		},
		{
			name: "stale-write: compared with the highest earlier row, not the previous one",
			history: concat(
				write(0, 1, TypeOK, "a", "r", "1:10"),
				write(2, 2, TypeOK, "b", "r", "1:12"),
				write(4, 3, TypeOK, "c", "r", "1:11"),
			),
			rows: []Row{row(1, "r", 1, 10, "a", 1), row(2, "r", 1, 12, "b", 2), row(3, "r", 1, 11, "c", 3)},
			want: []found{{KindNotLinearizable, "r", ""}, {KindStaleWrite, "r", "2,3"}},
		},
		{
			name: "resources are independent",
			history: concat(
				write(0, 1, TypeOK, "a", "r", "1:12"),
				write(2, 2, TypeOK, "b", "s", "1:10"),
			),
			rows: []Row{row(1, "r", 1, 12, "a", 1), row(2, "s", 1, 10, "b", 2)},
			want: []found{},
		},
		{
			// Interleaving cannot happen without a stale write; the
			// returning higher holder's row is the one only (d) explains.
			name: "stale-write: not also charged to the holder it cut into",
			history: concat(
				write(0, 2, TypeOK, "b1", "r", "1:12"),
				write(2, 1, TypeOK, "a", "r", "1:10"),
				write(4, 2, TypeOK, "b2", "r", "1:12"),
			),
			rows: []Row{row(1, "r", 1, 12, "b1", 2), row(2, "r", 1, 10, "a", 1), row(3, "r", 1, 12, "b2", 2)},
			want: []found{{KindNotLinearizable, "r", ""}, {KindStaleWrite, "r", "1,2"}},
		},
		{
			name: "stale-write: each stale row once",
			history: concat(
				write(0, 1, TypeOK, "a1", "r", "1:10"),
				write(2, 2, TypeOK, "b", "r", "1:12"),
				write(4, 1, TypeOK, "a2", "r", "1:10"),
				write(6, 1, TypeOK, "a3", "r", "1:10"),
			),
			rows: []Row{row(1, "r", 1, 10, "a1", 1), row(2, "r", 1, 12, "b", 2), row(3, "r", 1, 10, "a2", 1), row(4, "r", 1, 10, "a3", 1)},
			want: []found{{KindNotLinearizable, "r", ""}, {KindStaleWrite, "r", "2,3"}, {KindStaleWrite, "r", "2,4"}},
		},
		{
			name:    "lost-write: acknowledged, no row",
			history: write(0, 1, TypeOK, "a", "r", "1:10"),
			rows:    nil,
			want:    []found{{KindLostWrite, "r", ""}},
		},
		{
			name:    "duplicate-intent: one acknowledged intent, two rows",
			history: write(0, 1, TypeOK, "a", "r", "1:10"),
			rows:    []Row{row(1, "r", 1, 10, "a", 1), row(2, "r", 1, 10, "a", 1)},
			want:    []found{{KindDuplicateIntent, "r", "1,2"}},
		},
		{
			name:    "refused-but-applied",
			history: write(0, 1, TypeFail, "a", "r", "1:10"),
			rows:    []Row{row(1, "r", 1, 10, "a", 1)},
			want:    []found{{KindRefusedButApplied, "r", "1"}},
		},
		{
			// The retry's refusal is the key's outcome: the first attempt
			// may not apply after it, and had it applied before, the retry
			// would have been answered its 200, replayed.
			name:    "refused-but-applied: a key refused for good by a retry of an unknown outcome",
			history: concat(write(0, 1, TypeInfo, "a", "r", "1:10"), write(2, 1, TypeFail, "a", "r", "1:10")),
			rows:    []Row{row(1, "r", 1, 10, "a", 1)},
			want:    []found{{KindRefusedButApplied, "r", "1"}},
		},
		{
			name: "a retry refused 503 not-applied leaves the key open: an unknown outcome may have a row",
			history: concat(write(0, 1, TypeInfo, "a", "r", "1:10"),
				[]Event{ev(2, 1, TypeInvoke, "a", "r", "1:10"), {Time: t0.Add(3 * time.Second), Worker: 1, Type: TypeFail, Intent: "a", Resource: "r", Token: "1:10", Status: 503, Detail: "unavailable"}}),
			rows: []Row{row(1, "r", 1, 10, "a", 1)},
			want: []found{},
		},
		{
			name:    "an invoke without an outcome (worker killed) may have a row",
			history: []Event{ev(0, 1, TypeInvoke, "a", "r", "1:10")},
			rows:    []Row{row(1, "r", 1, 10, "a", 1)},
			want:    []found{},
		},
		{
			name:    "unknown-intent: a row no worker invoked",
			history: write(0, 1, TypeOK, "a", "r", "1:10"),
			rows:    []Row{row(1, "r", 1, 10, "a", 1), row(2, "r", 1, 10, "ghost", 9)},
			want:    []found{{KindUnknownIntent, "r", "2"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(Input{History: tt.history, Rows: tt.rows})
			if g := summarize(got.Violations); !slices.Equal(g, tt.want) {
				t.Errorf("violations = %+v, want %+v", g, tt.want)
				for _, v := range got.Violations {
					t.Logf("%s: %s", v.Kind, v.Message)
				}
			}
			if got.OK() != (len(tt.want) == 0) {
				t.Errorf("OK() = %v, want %v", got.OK(), len(tt.want) == 0)
			}
		})
	}
}

// TestCheckPausedHolder is the nemesis's main scenario with fencing off:
// worker 1 is paused past its TTL, worker 2 takes the lease and writes, and
// worker 1's write with its old token lands after worker 2's.
func TestCheckPausedHolder(t *testing.T) {
	history := concat(
		write(0, 1, TypeOK, "w1-a", "acct/7", "1:10"),
		[]Event{ev(2, 1, TypeInvoke, "w1-b", "acct/7", "1:10")}, // SIGSTOP before the send
		write(20, 2, TypeOK, "w2-a", "acct/7", "1:12"),
		[]Event{ev(40, 1, TypeOK, "w1-b", "acct/7", "1:10")}, // SIGCONT: sent, applied
	)
	rows := []Row{
		row(1, "acct/7", 1, 10, "w1-a", 1),
		row(2, "acct/7", 1, 12, "w2-a", 2),
		row(3, "acct/7", 1, 10, "w1-b", 1),
	}
	got := Check(Input{History: history, Rows: rows, Faults: map[string]int{"pause": 1}})

	want := []found{{KindStaleWrite, "acct/7", "2,3"}}
	if g := summarize(got.Violations); !slices.Equal(g, want) {
		t.Fatalf("violations = %+v, want %+v", g, want)
	}
	v := got.Violations[0]
	var gotTimeline []string
	for _, e := range v.Timeline {
		gotTimeline = append(gotTimeline, fmt.Sprintf("%d %s %s", e.Worker, e.Type, e.Intent))
	}
	wantTimeline := []string{"1 invoke w1-b", "2 invoke w2-a", "2 ok w2-a", "1 ok w1-b"}
	if !slices.Equal(gotTimeline, wantTimeline) {
		t.Errorf("timeline = %q, want %q", gotTimeline, wantTimeline)
	}
	if want := "FAIL: 1 violation (1 stale-write)"; got.Verdict != want {
		t.Errorf("Verdict = %q, want %q", got.Verdict, want)
	}
	if got.Faults["pause"] != 1 {
		t.Errorf("Faults = %v, want pause:1", got.Faults)
	}
}

func TestReport(t *testing.T) {
	history := concat(
		write(0, 1, TypeOK, "a", "r", "1:10"),
		write(2, 1, TypeOK, "b", "r", "1:10"),
		write(4, 2, TypeOK, "c", "s", "1:12"),
		write(6, 2, TypeOK, "d", "s", "1:11"),
		write(8, 2, TypeFail, "e", "s", "1:11"),
	)
	// The passing run sent d with c's token (d of the others, with 1:11,
	// cannot pass: it comes after c's 1:12 was acknowledged).
	passing := slices.Clone(history)
	passing[6].Token, passing[7].Token = "1:12", "1:12"
	tests := []struct {
		name        string
		history     []Event
		rows        []Row
		wantVerdict string
	}{
		{"pass", passing, []Row{row(1, "r", 1, 10, "a", 1), row(2, "r", 1, 10, "b", 1), row(3, "s", 1, 12, "c", 2), row(4, "s", 1, 12, "d", 2)},
			"PASS: 4 acknowledged writes, 0 violations"},
		{"most frequent kind first", history, []Row{row(1, "r", 1, 10, "a", 1), row(3, "s", 1, 12, "c", 2), row(4, "s", 1, 11, "d", 2)},
			"FAIL: 3 violations (1 lost-write, 1 not-linearizable, 1 stale-write)"},
		{"counts", history, []Row{row(3, "s", 1, 12, "c", 2), row(4, "s", 1, 11, "d", 2), row(5, "s", 1, 11, "e", 2)},
			"FAIL: 6 violations (2 lost-write, 2 stale-write, 1 not-linearizable, 1 refused-but-applied)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			history := tt.history
			got := Check(Input{History: history, Rows: tt.rows})
			if got.Verdict != tt.wantVerdict {
				t.Errorf("Verdict = %q, want %q", got.Verdict, tt.wantVerdict)
			}
			if got.Rows != len(tt.rows) || got.Resources != 2 {
				t.Errorf("Rows, Resources = %d, %d, want %d, 2", got.Rows, got.Resources, len(tt.rows))
			}
			if want := map[string]int{TypeInvoke: 5, TypeOK: 4, TypeFail: 1}; fmt.Sprint(got.Events) != fmt.Sprint(want) {
				t.Errorf("Events = %v, want %v", got.Events, want)
			}
			// The runner may read rows in any order; the Report must not care.
			reversed := slices.Clone(tt.rows)
			slices.Reverse(reversed)
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(Check(Input{History: history, Rows: reversed}))
			if string(a) != string(b) {
				t.Errorf("Report depends on row order:\n%s\n%s", a, b)
			}
		})
	}
}

func TestReportJSON(t *testing.T) {
	tests := []struct {
		name   string
		report Report
		want   string
	}{
		{"from Check", Check(Input{}), `{"events":{},"rows":0,"resources":0,"faults":{},"violations":[],"linearizable":"ok","verdict":"PASS: 0 acknowledged writes, 0 violations"}`},
		{"built by hand", Report{}, `{"events":{},"rows":0,"resources":0,"faults":{},"violations":[],"verdict":""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.report)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("JSON = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestStaleRowDoesNotEndTheHoldersRun: 5, 7, 5 (stale), 7 is one stale
// write; the holder of 7 that it cut into did nothing wrong.
func TestStaleRowDoesNotEndTheHoldersRun(t *testing.T) {
	rows := []Row{
		{ID: 1, Resource: "res/r0", Epoch: 1, Revision: 5, Intent: "a"},
		{ID: 2, Resource: "res/r0", Epoch: 1, Revision: 7, Intent: "b"},
		{ID: 3, Resource: "res/r0", Epoch: 1, Revision: 5, Intent: "c"},
		{ID: 4, Resource: "res/r0", Epoch: 1, Revision: 7, Intent: "d"},
	}
	var history []Event
	for _, r := range rows {
		history = append(history, Event{Type: TypeInvoke, Intent: r.Intent, Resource: r.Resource}, Event{Type: TypeOK, Intent: r.Intent, Resource: r.Resource})
	}
	rep := Check(Input{History: history, Rows: rows})
	if len(rep.Violations) != 1 || rep.Violations[0].Kind != KindStaleWrite {
		t.Fatalf("violations = %+v, want exactly one stale-write", rep.Violations)
	}
}

// refused is a write refused as stale: invoke at sec, "fail" with the
// problem kind at sec+1.
func refused(sec, worker int, intent, res, token string) []Event {
	w := write(sec, worker, TypeFail, intent, res, token)
	w[1].Detail = "stale-token"
	return w
}

// TestLinearizable: what porcupine adds to the row-order checks — a
// refusal must have met a newer token — and what it must accept: a
// refusal explained by a concurrent newer write, and a write whose answer
// was lost landing late.
func TestLinearizable(t *testing.T) {
	tests := []struct {
		name    string
		history []Event
		rows    []Row
		want    []found
	}{
		{
			name: "a refusal no newer token explains",
			history: concat(
				write(0, 1, TypeOK, "a", "r", "1:10"),
				refused(2, 2, "b", "r", "1:12"),
			),
			rows: []Row{row(1, "r", 1, 10, "a", 1)},
			want: []found{{KindNotLinearizable, "r", ""}},
		},
		{
			name: "a refusal explained by a concurrent newer write",
			history: concat(
				write(0, 1, TypeOK, "a", "r", "1:10"),
				[]Event{ev(2, 3, TypeInvoke, "c", "r", "1:12")},
				refused(3, 2, "b", "r", "1:11"),
				[]Event{ev(6, 3, TypeOK, "c", "r", "1:12")},
			),
			rows: []Row{row(1, "r", 1, 10, "a", 1), row(2, "r", 1, 12, "c", 3)},
			want: []found{},
		},
		{
			name: "an unanswered write that landed after a later, older one",
			history: concat(
				write(0, 2, TypeInfo, "b", "r", "1:12"), // the answer was lost; the write was not
				write(2, 1, TypeOK, "a", "r", "1:10"),
				refused(4, 1, "a2", "r", "1:10"),
			),
			rows: []Row{row(1, "r", 1, 10, "a", 1), row(2, "r", 1, 12, "b", 2)},
			want: []found{},
		},
		{
			name: "an applied write whose answer came before a newer fence, refused later",
			history: concat(
				write(0, 1, TypeOK, "a", "r", "1:12"),
				refused(2, 2, "b", "r", "1:10"),
				write(4, 1, TypeOK, "a2", "r", "1:12"),
			),
			rows: []Row{row(1, "r", 1, 12, "a", 1), row(2, "r", 1, 12, "a2", 1)},
			want: []found{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(Input{History: tt.history, Rows: tt.rows})
			if g := summarize(got.Violations); !slices.Equal(g, tt.want) {
				t.Errorf("violations = %+v, want %+v", g, tt.want)
			}
			wantLin := "ok"
			if len(tt.want) > 0 {
				wantLin = "violated"
			}
			if got.Linearizable != wantLin {
				t.Errorf("Linearizable = %q, want %q", got.Linearizable, wantLin)
			}
		})
	}
}
