package bench

import (
	"math"
	"slices"
	"time"
)

// Percentiles are exact latency percentiles of one path of one cell,
// nearest-rank over every acknowledged write of the measured window.
type Percentiles struct {
	P50  time.Duration `json:"p50_ns"`
	P99  time.Duration `json:"p99_ns"`
	P999 time.Duration `json:"p999_ns"`
	Max  time.Duration `json:"max_ns"`
}

// summarize sorts lat in place and returns its percentiles; all zero for
// no samples.
func summarize(lat []time.Duration) Percentiles {
	slices.Sort(lat)
	if len(lat) == 0 {
		return Percentiles{}
	}
	return Percentiles{
		P50:  percentile(lat, 0.50),
		P99:  percentile(lat, 0.99),
		P999: percentile(lat, 0.999),
		Max:  lat[len(lat)-1],
	}
}

// percentile returns the nearest-rank q-quantile of sorted, 0 < q <= 1:
// the smallest sample with at least q of all samples at or below it. It
// interpolates nothing, so every reported latency was really observed.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	// The epsilon keeps 0.99×100 = 99.00000000000001 from rounding up to
	// rank 100.
	rank := int(math.Ceil(q*float64(len(sorted)) - 1e-9))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// merge concatenates the per-client samples into one slice.
func merge(parts [][]time.Duration) []time.Duration {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]time.Duration, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
