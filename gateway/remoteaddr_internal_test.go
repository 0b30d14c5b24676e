package gateway

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

func remoteOf(trusted []string, peer string, headers map[string][]string) string {
	g := &Gateway{}
	for _, p := range trusted {
		g.cfg.TrustedProxies = append(g.cfg.TrustedProxies, netip.MustParsePrefix(p))
	}
	r := &http.Request{RemoteAddr: peer, Header: http.Header(headers)}
	return g.remoteAddr(r)
}

func TestRemoteAddr(t *testing.T) {
	proxies := []string{"10.0.0.0/8", "fd00::/8"}
	tests := []struct {
		name    string
		trusted []string
		peer    string
		headers map[string][]string
		want    string
	}{
		{"no trusted proxies", nil, "10.0.0.1:5555", map[string][]string{"X-Forwarded-For": {"203.0.113.9"}}, "10.0.0.1"},
		{"an untrusted peer", proxies, "192.0.2.1:5555", map[string][]string{"X-Forwarded-For": {"203.0.113.9"}}, "192.0.2.1"},
		{"a trusted peer", proxies, "10.0.0.1:5555", map[string][]string{"X-Forwarded-For": {"203.0.113.9"}}, "203.0.113.9"},
		{"a chain of trusted proxies", proxies, "10.0.0.1:5555", map[string][]string{"X-Forwarded-For": {"198.51.100.1, 203.0.113.9", "10.9.9.9"}}, "203.0.113.9"},
		{"every hop trusted", proxies, "10.0.0.1:5555", map[string][]string{"X-Forwarded-For": {"10.0.0.3, 10.0.0.2"}}, "10.0.0.3"},
		{"a hop with a port", proxies, "10.0.0.1:5555", map[string][]string{"X-Forwarded-For": {"203.0.113.9:443"}}, "203.0.113.9"},
		{"garbage stops the walk", proxies, "10.0.0.1:5555", map[string][]string{"X-Forwarded-For": {"203.0.113.9, unknown, 10.0.0.2"}}, "10.0.0.2"},
		{"an empty header", proxies, "10.0.0.1:5555", map[string][]string{"X-Forwarded-For": {""}}, "10.0.0.1"},
		{"Forwarded wins", proxies, "10.0.0.1:5555", map[string][]string{"Forwarded": {"for=192.0.2.60;proto=http;by=203.0.113.43"}, "X-Forwarded-For": {"198.51.100.1"}}, "192.0.2.60"},
		{"Forwarded, quoted IPv6", proxies, "[fd00::1]:5555", map[string][]string{"Forwarded": {`For="[2001:db8:cafe::17]:4711"`}}, "2001:db8:cafe::17"},
		{"Forwarded, obfuscated", proxies, "10.0.0.1:5555", map[string][]string{"Forwarded": {"for=_hidden, for=10.0.0.2"}}, "10.0.0.2"},
		{"Forwarded, a quoted comma", proxies, "10.0.0.1:5555", map[string][]string{"Forwarded": {`for=203.0.113.9;ext="a,b", for=10.0.0.2`}}, "203.0.113.9"},
		{"an IPv4-mapped peer", proxies, "[::ffff:10.0.0.1]:5555", map[string][]string{"X-Forwarded-For": {"203.0.113.9"}}, "203.0.113.9"},
		{"a peer that is no address", proxies, "@unix", map[string][]string{"X-Forwarded-For": {"203.0.113.9"}}, "@unix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := remoteOf(tt.trusted, tt.peer, tt.headers); got != tt.want {
				t.Errorf("remoteAddr = %q, want %q", got, tt.want)
			}
		})
	}
	long := strings.Repeat("10.0.0.9, ", 100) + "10.0.0.2"
	if got := remoteOf(proxies, "10.0.0.1:1", map[string][]string{"X-Forwarded-For": {long}}); got != "10.0.0.9" {
		t.Errorf("a chain of 101 trusted hops = %q, want the farthest of the %d read", got, maxForwardedHops)
	}
}

// FuzzForwardedHops: whatever a trusted proxy's headers hold, the address
// recorded is a valid address without a zone, the peer's or one written
// in them; an untrusted peer's headers are never read.
func FuzzForwardedHops(f *testing.F) {
	for _, s := range []string{"203.0.113.9", "a, 10.0.0.2", `for="[2001:db8::1]:80";by=x`, `for="\"`, "for=;;,,", "[::1]", "::ffff:1.2.3.4%eth0"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, xff, fwd string) {
		headers := map[string][]string{"X-Forwarded-For": {xff}}
		if fwd != "" {
			headers["Forwarded"] = []string{fwd}
		}
		got := remoteOf([]string{"0.0.0.0/0", "::/0"}, "10.0.0.1:1", headers)
		a, err := netip.ParseAddr(got)
		if err != nil || a.Zone() != "" {
			t.Fatalf("recorded %q: not an address without a zone", got)
		}
		if got != "10.0.0.1" {
			hops := forwardedHops(http.Header(headers))
			found := false
			for _, h := range hops {
				if p, ok := parseHop(h); ok && p.Unmap().WithZone("") == a {
					found = true
				}
			}
			if !found {
				t.Fatalf("recorded %q, which no hop of %q names", got, hops)
			}
		}
		if got := remoteOf(nil, "192.0.2.1:1", headers); got != "192.0.2.1" {
			t.Fatalf("an untrusted peer recorded as %q", got)
		}
	})
}
