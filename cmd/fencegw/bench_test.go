package main

import (
	"context"
	"errors"
	"io"
	"testing"
)

// TestBenchRefusesBadFlags checks that flag mistakes are usage errors
// caught before any server starts.
func TestBenchRefusesBadFlags(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("FENCEGW_DATABASE_URL", "")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"zero clients", []string{"--clients", "0"}},
		{"unknown distribution", []string{"--dist", "gaussian"}},
		{"no duration", []string{"--duration", "0s"}},
		{"negative warmup", []string{"--warmup", "-1s"}},
		{"gateway without database", []string{"--gateway", "http://127.0.0.1:8080"}},
		{"remote gateway", []string{"--gateway", "http://10.1.2.3:8080", "--database-url", "postgres://x@127.0.0.1/x"}},
		{"no etcd endpoint", []string{"--etcd", " , "}},
		{"stray argument", []string{"now"}},
		{"negative replicas", []string{"--replicas", "-1"}},
		{"replicas and a gateway", []string{"--replicas", "2", "--gateway", "http://127.0.0.1:8080", "--database-url", "postgres://x@127.0.0.1/x", "--etcd", "127.0.0.1:2379"}},
		{"gateway pid without a gateway", []string{"--gateway-pid", "42"}},
		{"wrk over replicas", []string{"--wrk", "--replicas", "2"}},
		{"negative idle connections", []string{"--idle-connections", "-1"}},
		{"negative fence rows", []string{"--fence-rows", "-1"}},
		{"absurd idempotency rows", []string{"--idempotency-rows", "1000000000000"}},
		{"an etcd of others without its KEK file", []string{"--etcd", "127.0.0.1:2379"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := execute(context.Background(), io.Discard, append([]string{"bench"}, tc.args...)...)
			if !errors.Is(err, errUsage) {
				t.Errorf("bench %q = %v, want a usage error", tc.args, err)
			}
		})
	}
}
