package check

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// attempt is one attempt of intent a on r with token 1:10 by worker 1:
// its invoke at sec, and, unless answer is nil, its answer.
func attempt(sec, n int, answer *Event) []Event {
	inv := Event{Time: t0.Add(time.Duration(sec) * time.Second), Worker: 1, Type: TypeInvoke, Intent: "a", Resource: "r", Token: "1:10", Attempt: n}
	if answer == nil {
		return []Event{inv}
	}
	a := *answer
	a.Worker, a.Intent, a.Resource, a.Token, a.Attempt = 1, "a", "r", "1:10", n
	return []Event{inv, a}
}

// answered is an answer at sec.
func answered(sec int, typ string, status int, replayed bool, digest, detail string) *Event {
	return &Event{Time: t0.Add(time.Duration(sec) * time.Second), Type: typ, Status: status, Replayed: replayed, Answer: digest, Detail: detail}
}

// TestCheckKeys: a write retried under its key is held to the key's
// promises: its final answers agree, it executes once, a replay is its
// first answer byte for byte, and a key refused for good has no row. Each
// history below breaks one (and is caught), or keeps them all, retries
// overlapping and unknown outcomes included (and passes, counted).
func TestCheckKeys(t *testing.T) {
	applied := []Row{row(1, "r", 1, 10, "a", 1)}
	tests := []struct {
		name      string
		history   []Event
		rows      []Row
		want      []string // kinds found
		wantStats map[string]int
	}{
		{
			name: "clean: an unknown outcome, a retry beside it and one after, both replayed",
			history: concat(
				attempt(0, 1, nil),
				attempt(1, 2, answered(3, TypeOK, 200, true, "d1", "")),
				[]Event{*answerOf(4, 1, answered(4, TypeInfo, 0, false, "", "context deadline exceeded"))},
				attempt(5, 3, answered(6, TypeOK, 200, true, "d1", "")),
			),
			rows: applied,
			wantStats: map[string]int{"attempts-retried": 2, "attempts-beside-one-in-flight": 1, "answers-replayed": 2,
				"unknown-then-settled": 1, "writes-retried": 1},
		},
		{
			name: "clean: executed by the first attempt, replayed to the second",
			history: concat(
				attempt(0, 1, answered(1, TypeOK, 200, false, "d1", "")),
				attempt(2, 2, answered(3, TypeOK, 200, true, "d1", "")),
			),
			rows:      applied,
			wantStats: map[string]int{"attempts-retried": 1, "answers-replayed": 1, "writes-retried": 1},
		},
		{
			name: "clean: a 503 not-applied, then a refusal replayed",
			history: concat(
				attempt(0, 1, answered(1, TypeFail, 503, false, "d0", "unavailable")),
				attempt(2, 2, answered(3, TypeFail, 409, false, "d2", "stale-token")),
				attempt(4, 3, answered(5, TypeFail, 409, true, "d2", "stale-token")),
			),
			wantStats: map[string]int{"attempts-retried": 2, "answers-replayed": 1, "unknown-then-settled": 1, "writes-retried": 1},
		},
		{
			name: "answers-disagree: applied, then refused",
			history: concat(
				attempt(0, 1, answered(1, TypeOK, 200, false, "d1", "")),
				attempt(2, 2, answered(3, TypeFail, 409, false, "d2", "stale-token")),
			),
			rows: applied,
			want: []string{KindAnswersDisagree, KindRefusedButApplied},
		},
		{
			name: "answers-disagree: two refusals of other kinds",
			history: concat(
				attempt(0, 1, answered(1, TypeFail, 409, false, "d1", "stale-token")),
				attempt(2, 2, answered(3, TypeFail, 409, true, "d2", "precondition-failed")),
			),
			want: []string{KindAnswersDisagree},
		},
		{
			name: "answers-disagree: two attempts executed, neither replayed",
			history: concat(
				attempt(0, 1, answered(1, TypeOK, 200, false, "d1", "")),
				attempt(2, 2, answered(3, TypeOK, 200, false, "d1", "")),
			),
			rows: applied,
			want: []string{KindAnswersDisagree},
		},
		{
			name: "replay-differs: a replayed 200 with another body",
			history: concat(
				attempt(0, 1, answered(1, TypeOK, 200, false, "d1", "")),
				attempt(2, 2, answered(3, TypeOK, 200, true, "d9", "")),
			),
			rows: applied,
			want: []string{KindReplayDiffers},
		},
		{
			name: "replay-differs: replays that differ, the first answer lost",
			history: concat(
				attempt(0, 1, answered(1, TypeInfo, 0, false, "", "EOF")),
				attempt(2, 2, answered(3, TypeFail, 409, true, "d1", "stale-token")),
				attempt(4, 3, answered(5, TypeFail, 409, true, "d2", "stale-token")),
			),
			want: []string{KindReplayDiffers},
		},
		{
			name: "refused-but-applied: refused for good while the first attempt was in flight, which then applied",
			history: concat(
				attempt(0, 1, nil),
				attempt(1, 2, answered(2, TypeFail, 409, false, "d1", "stale-token")),
				[]Event{*answerOf(3, 1, answered(3, TypeInfo, 0, false, "", "context deadline exceeded"))},
			),
			rows: applied,
			want: []string{KindRefusedButApplied},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(Input{History: tt.history, Rows: tt.rows})
			var got []string
			for _, v := range r.Violations {
				if v.Kind != KindNotLinearizable && v.Kind != KindLostWrite {
					got = append(got, v.Kind)
				}
				t.Logf("%s: %s", v.Kind, v.Message)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("violations %q, want %q", got, tt.want)
			}
			if tt.wantStats != nil && !maps.Equal(r.Retries, tt.wantStats) {
				t.Errorf("retries %v, want %v", r.Retries, tt.wantStats)
			}
		})
	}
}

// answerOf is a's answer to attempt n, alone (its invoke came earlier).
func answerOf(sec, n int, a *Event) *Event {
	e := attempt(sec, n, a)[1]
	return &e
}
