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

type fileJWT struct {
	Subject string `yaml:"subject"`
}

// maxSubjectLength bounds a JWT subject in the policy.
const maxSubjectLength = 1024

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
	byJWT   map[string]*Client // by the claim that names the client
}

func newClientIndex() clientIndex {
	return clientIndex{byToken: map[[32]byte]*Client{}, byURI: map[string]*Client{}, byDNS: map[string]*Client{}, byCN: map[string]*Client{}, byJWT: map[string]*Client{}}
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

// ClientByJWTSubject returns the client whose JWTs name it subject (in
// the claim serve's --jwt-client-claim says, sub by default), or nil.
func (p *Policy) ClientByJWTSubject(subject string) *Client { return p.clients.byJWT[subject] }

// UsesJWT reports whether a client is known by its JWT.
func (p *Policy) UsesJWT() bool { return len(p.clients.byJWT) > 0 }

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

// compileJWT indexes c by the subject its JWTs carry.
func compileJWT(ps *problems, idx *clientIndex, c *Client, fj *fileJWT, entry string) {
	entry += ".jwt.subject"
	switch {
	case fj.Subject == "":
		ps.add(entry, "missing: the value of the claim that names the client, e.g. system:serviceaccount:billing:billing")
	case len(fj.Subject) > maxSubjectLength:
		ps.add(entry, "longer than %d bytes", maxSubjectLength)
	case idx.byJWT[fj.Subject] != nil:
		ps.add(entry, "same subject as client %s", idx.byJWT[fj.Subject].Name)
	default:
		idx.byJWT[fj.Subject] = c
		c.jwt = fj.Subject
	}
}
