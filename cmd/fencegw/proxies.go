package main

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/spf13/pflag"
)

// cidrs is --trusted-proxies: CIDRs, comma-separated, kept as written;
// trustedProxies reads them.
type cidrs []string

func (c *cidrs) Set(s string) error { *c = splitList(s); return nil }
func (c *cidrs) String() string     { return strings.Join(*c, ",") }
func (c *cidrs) Type() string       { return "CIDR,..." }

func bindTrustedProxies(fs *pflag.FlagSet, c *cidrs) {
	fs.Var(c, "trusted-proxies", "comma-separated CIDRs of the proxies in front of the gateway (e.g. 10.0.0.0/8,fd00::/8): only a peer in one of them is believed when its X-Forwarded-For or Forwarded header names the client's address for the access log and the audit; any other peer is recorded by its own address (default: none)")
}

// trustedProxies parses --trusted-proxies; a bad entry is a usage error
// naming it. A bare address is a proxy of its own (/32 or /128).
func trustedProxies(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil || a.Zone() != "" {
				return nil, fmt.Errorf("%w: --trusted-proxies: %q is not a CIDR: want e.g. 10.0.0.0/8 or fd00::/8", errUsage, s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
