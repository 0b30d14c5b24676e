package gateway

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// maxForwardedHops bounds the hops of X-Forwarded-For or Forwarded that
// are read, nearest first: a chain of trusted proxies longer than that is
// a mistake, and a header of thousands of hops must not cost thousands.
const maxForwardedHops = 32

// remoteAddr is the address the access log and the audit name a request's
// client by: the peer's own, unless the peer is a trusted proxy
// (Config.TrustedProxies). Then the proxies' record of the hops is read
// from the nearest back — Forwarded (RFC 7239) if the request has one,
// else X-Forwarded-For — past every trusted proxy, to the first address
// that is not one: what a proxy we trust says its peer was. A hop that is
// no address ("unknown", an obfuscated name, garbage) stops the walk at
// the proxy that wrote it. An untrusted peer's headers are never read: a
// client cannot name itself someone else.
func (g *Gateway) remoteAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if len(g.cfg.TrustedProxies) == 0 {
		return host
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !g.trustedProxy(peer) {
		return host
	}
	return clientAddr(peer, forwardedHops(r.Header), g.trustedProxy).String()
}

func (g *Gateway) trustedProxy(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, p := range g.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientAddr walks hops (as the proxies appended them, nearest last) from
// peer back while the address in hand is a trusted proxy's.
func clientAddr(peer netip.Addr, hops []string, trusted func(netip.Addr) bool) netip.Addr {
	addr := peer
	for i := len(hops) - 1; i >= 0 && trusted(addr); i-- {
		a, ok := parseHop(hops[i])
		if !ok {
			break
		}
		addr = a
	}
	return addr.Unmap().WithZone("")
}

// forwardedHops returns the nearest maxForwardedHops hops a request's
// proxies recorded: the for= of each Forwarded element, or else each
// X-Forwarded-For entry; every header line in order.
func forwardedHops(h http.Header) []string {
	var hops []string
	if lines := h.Values("Forwarded"); len(lines) > 0 {
		for _, line := range lines {
			for _, element := range splitQuoted(line, ',') {
				hops = append(hops, forwardedFor(element))
			}
		}
	} else {
		for _, line := range h.Values("X-Forwarded-For") {
			hops = append(hops, strings.Split(line, ",")...)
		}
	}
	if len(hops) > maxForwardedHops {
		hops = hops[len(hops)-maxForwardedHops:]
	}
	return hops
}

// forwardedFor is the for= parameter of one Forwarded element, unquoted;
// "" if it has none.
func forwardedFor(element string) string {
	for _, pair := range splitQuoted(element, ';') {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "for") {
			v = strings.TrimSpace(v)
			if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
				v = strings.ReplaceAll(v[1:len(v)-1], `\`, "")
			}
			return v
		}
	}
	return ""
}

// splitQuoted splits s at sep outside double-quoted strings.
func splitQuoted(s string, sep byte) []string {
	var parts []string
	quoted, escaped, start := false, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// parseHop reads one hop's address: an IP, an IP with a port, or an IPv6
// address in brackets, with or without a port.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a, true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr(), true
	}
	if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil {
			return a, true
		}
	}
	return netip.Addr{}, false
}
