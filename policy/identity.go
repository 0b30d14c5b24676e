package policy

import (
	"crypto/x509"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The ways a client proves who it is, besides its bearer token: a client
// certificate (one of its URI SANs, such as a SPIFFE ID, one of its DNS
// SANs, or its subject's CN, as the client's entry says) or a JWT whose
// claim naming the client holds the entry's subject.
type fileCertificate struct {
	URI string `yaml:"uri"`
	DNS string `yaml:"dns"`
	CN  string `yaml:"cn"`
}

// The patterns the schema has for uri and dns.
var (
	uriRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$`)
	dnsRE = regexp.MustCompile(`^[^\s/:@]+$`)
)

// clientIndex finds a client by what it presents.
type clientIndex struct {
	all     []*Client // by name
	byToken map[[32]byte]*Client
	byURI   map[string]*Client
	byDNS   map[string]*Client // lower case
	byCN    map[string]*Client
}

func newClientIndex() clientIndex {
	return clientIndex{byToken: map[[32]byte]*Client{}, byURI: map[string]*Client{}, byDNS: map[string]*Client{}, byCN: map[string]*Client{}}
}

// ClientByCertificate returns the client a verified certificate names,
// nil if it names none. A certificate that names two clients (a URI SAN
// one's, its CN another's) is refused: it is not clear who is calling.
func (p *Policy) ClientByCertificate(cert *x509.Certificate) (*Client, error) {
	var found *Client
	add := func(c *Client) bool {
		if c == nil || c == found {
			return true
		}
		if found != nil {
			return false
		}
		found = c
		return true
	}
	ok := add(p.clients.byCN[cert.Subject.CommonName])
	for _, u := range cert.URIs {
		ok = ok && add(p.clients.byURI[u.String()])
	}
	for _, d := range cert.DNSNames {
		ok = ok && add(p.clients.byDNS[strings.ToLower(d)])
	}
	if !ok {
		return nil, ErrAmbiguousCertificate
	}
	return found, nil
}

// UsesCertificates reports whether a client is known by its certificate.
func (p *Policy) UsesCertificates() bool {
	return len(p.clients.byURI)+len(p.clients.byDNS)+len(p.clients.byCN) > 0
}

// UsesTokens reports whether a client is known by its bearer token.
func (p *Policy) UsesTokens() bool { return len(p.clients.byToken) > 0 }

// compileCertificate indexes c by the name its certificate carries.
func compileCertificate(ps *problems, idx *clientIndex, c *Client, fc *fileCertificate, entry string) {
	entry += ".certificate"
	set := 0
	for _, v := range []string{fc.URI, fc.DNS, fc.CN} {
		if v != "" {
			set++
		}
	}
	if set != 1 {
		ps.add(entry, "want one of uri (a URI SAN such as a SPIFFE ID), dns (a DNS SAN) or cn (the subject's common name)")
		return
	}
	var (
		byName map[string]*Client
		key    string
	)
	switch {
	case fc.URI != "":
		u, err := url.Parse(fc.URI)
		if err != nil || !uriRE.MatchString(fc.URI) {
			ps.add(entry+".uri", "want an absolute URI, e.g. spiffe://example.org/ns/billing/sa/billing")
			return
		}
		byName, key, c.certificate = idx.byURI, u.String(), "uri "+u.String()
	case fc.DNS != "":
		if len(fc.DNS) > 253 || !dnsRE.MatchString(fc.DNS) {
			ps.add(entry+".dns", "want a DNS name, e.g. billing.example.org")
			return
		}
		byName, key, c.certificate = idx.byDNS, strings.ToLower(fc.DNS), "dns "+strings.ToLower(fc.DNS)
	default:
		if utf8.RuneCountInString(fc.CN) > 64 {
			ps.add(entry+".cn", "want a common name of at most 64 characters")
			return
		}
		byName, key, c.certificate = idx.byCN, fc.CN, "cn "+fc.CN
	}
	if other, dup := byName[key]; dup {
		ps.add(entry, "same certificate name as client %s", other.Name)
		return
	}
	byName[key] = c
}
