package main

import (
	"errors"
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Time
		err  bool
	}{
		{"2026-12-01T14:02:00Z", time.Date(2026, 12, 1, 14, 2, 0, 0, time.UTC), false},
		{"90m", now.Add(-90 * time.Minute), false},
		{"0s", time.Time{}, true},
		{"-1h", time.Time{}, true},
		{"yesterday", time.Time{}, true},
		{"2026-12-01", time.Time{}, true},
	} {
		got, err := parseSince(c.in, now)
		if (err != nil) != c.err || !got.Equal(c.want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v (error %t)", c.in, got, err, c.want, c.err)
		}
		if err != nil && !errors.Is(err, errUsage) {
			t.Errorf("parseSince(%q): %v is not a usage error", c.in, err)
		}
	}
}

// FuzzParseSince: --since's parser never panics, refuses only with a
// usage error, and never gives a time after now.
func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"2026-12-01T14:02:00Z", "90m", "1h30m", "0s", "-1h", "", "2026-12-01T14:02:00.123456789+02:00", "9999999999h"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseSince(s, now)
		if err != nil {
			if !errors.Is(err, errUsage) {
				t.Fatalf("parseSince(%q) = %v: not a usage error", s, err)
			}
			return
		}
		if _, rfcErr := time.Parse(time.RFC3339Nano, s); rfcErr != nil && !got.Before(now) {
			t.Fatalf("parseSince(%q) = %v: a duration back from now must be before it", s, got)
		}
	})
}
