package main

import (
	"errors"
	"io"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// TestTrustedProxiesFlag: --trusted-proxies takes CIDRs and bare
// addresses; a bad entry, on the command line or in the environment, is a
// usage error naming it, before anything starts.
func TestTrustedProxiesFlag(t *testing.T) {
	got, err := trustedProxies(splitList("10.0.0.1/8, fd00::/8,192.0.2.7"))
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("192.0.2.7/32")}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("trustedProxies = %v, %v; want %v", got, err, want)
	}
	base := []string{"serve", "--policy", "p.yaml", "--database-url", "postgres://u@127.0.0.1:1/db", "--etcd", "127.0.0.1:1"}
	for _, tc := range []struct{ flag, env, bad string }{
		{"10.0.0.0/33", "", "10.0.0.0/33"},
		{"10.0.0.0/8,proxy.internal", "", "proxy.internal"},
		{"fe80::1%eth0", "", "fe80::1%eth0"},
		{"", "192.0.2.0/24,*", `"*"`},
	} {
		args := base
		if tc.flag != "" {
			args = append(slices.Clone(base), "--trusted-proxies", tc.flag)
		}
		if tc.env != "" {
			t.Setenv("FENCEGW_TRUSTED_PROXIES", tc.env)
		}
		err := execute(t.Context(), io.Discard, args...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.bad) || !strings.Contains(err.Error(), "--trusted-proxies") {
			t.Errorf("--trusted-proxies %q (env %q) = %v, want a usage error naming %s", tc.flag, tc.env, err, tc.bad)
		}
	}
}
