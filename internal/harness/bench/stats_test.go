package bench

import (
	"testing"
	"time"
)

func millis(ns ...int) []time.Duration {
	out := make([]time.Duration, len(ns))
	for i, n := range ns {
		out[i] = time.Duration(n) * time.Millisecond
	}
	return out
}

func seq(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(n-i) * time.Millisecond // reversed: summarize sorts
	}
	return out
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []time.Duration
		want Percentiles
	}{
		{"empty", nil, Percentiles{}},
		{"one sample", millis(7), Percentiles{P50: 7 * time.Millisecond, P99: 7 * time.Millisecond, P999: 7 * time.Millisecond, Max: 7 * time.Millisecond}},
		{"two samples", millis(9, 1), Percentiles{P50: 1 * time.Millisecond, P99: 9 * time.Millisecond, P999: 9 * time.Millisecond, Max: 9 * time.Millisecond}},
		{"1..100", seq(100), Percentiles{P50: 50 * time.Millisecond, P99: 99 * time.Millisecond, P999: 100 * time.Millisecond, Max: 100 * time.Millisecond}},
		{"1..1000", seq(1000), Percentiles{P50: 500 * time.Millisecond, P99: 990 * time.Millisecond, P999: 999 * time.Millisecond, Max: 1000 * time.Millisecond}},
		{"1..2000", seq(2000), Percentiles{P50: 1000 * time.Millisecond, P99: 1980 * time.Millisecond, P999: 1998 * time.Millisecond, Max: 2000 * time.Millisecond}},
		{"one outlier in 1000", append(millis(make([]int, 999)...), time.Second), Percentiles{P999: 0, Max: time.Second}},
		{"two outliers in 1000", append(millis(make([]int, 998)...), time.Second, 2*time.Second), Percentiles{P999: time.Second, Max: 2 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summarize(tc.in); got != tc.want {
				t.Errorf("summarize = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	got := merge([][]time.Duration{millis(3, 1), nil, millis(2)})
	if want := millis(3, 1, 2); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("merge = %v, want %v", got, want)
	}
}
