package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Anonymous is the name the gateway gives a caller that is no client of
// the policy (authentication off, or failed); no client may be called so.
const Anonymous = "anonymous"

// Client is a caller, known by the SHA-256 of its bearer token, by its
// client certificate or by its JWT's subject (identity.go), and the operations it
// may call. The token itself never appears in the policy.
type Client struct {
	Name       string
	operations map[string]bool
	any        bool
	leases     map[string]bool // lock-only lease entries it may take (leases.go)
	anyLease   bool
	token      bool // known by a bearer token
	// certificate is how its certificate names it, e.g. "uri spiffe://…".
	certificate string
	jwt         string    // the subject of its JWTs
	sql         sqlAccess // what it may do on the SQL front (sqlclients.go)
}

// mayLease reports whether c may take the lock-only lease entry name.
func (c *Client) mayLease(name string) bool { return c.anyLease || c.leases[name] }

// leaseNames lists the lock-only entries c may lease, for Describe.
func (c *Client) leaseNames() string {
	if c.anyLease {
		return "*"
	}
	return strings.Join(sortedKeys(c.leases), ", ")
}

// MayCall reports whether c may call the named operation.
func (c *Client) MayCall(op string) bool { return c.any || c.operations[op] }

// MayCallEvery reports whether the client was declared with operations
// ["*"]: an operator's client, which may see what concerns every resource
// (the status).
func (c *Client) MayCallEvery() bool { return c.any }

// Authenticate returns the client whose token is bearer. With no clients
// in the policy, authentication is off and it returns (nil, true).
func (p *Policy) Authenticate(bearer string) (*Client, bool) {
	if !p.AuthRequired() {
		return nil, true
	}
	c, ok := p.clients.byToken[sha256.Sum256([]byte(bearer))]
	return c, ok
}

// AuthRequired reports whether the policy declares clients.
func (p *Policy) AuthRequired() bool { return len(p.clients.all) > 0 }

type fileClient struct {
	TokenSHA256 string           `yaml:"token_sha256"`
	Certificate *fileCertificate `yaml:"certificate"`
	JWT         *fileJWT         `yaml:"jwt"`
	Operations  []string         `yaml:"operations"`
	Leases      []string         `yaml:"leases"` // lock-only lease entries, or "*"
	// The SQL front: the database role its sessions run as, and the
	// resources they may fence (sqlclients.go).
	SQLRole      string   `yaml:"sql_role"`
	SQLResources []string `yaml:"sql_resources"`
}

// compileClients checks clients against the declared operations, so an
// operation with its own problems is not reported again as unknown.
func compileClients(ps *problems, p *Policy, clients map[string]fileClient, declared map[string]fileOperation, leases map[string]string) {
	p.clients = newClientIndex()
	for _, name := range sortedKeys(clients) {
		fc, entry := clients[name], "clients."+name
		c := &Client{Name: name, operations: map[string]bool{}, leases: map[string]bool{}}
		p.clients.all = append(p.clients.all, c)
		for _, l := range fc.Leases {
			switch {
			case l == "*":
				c.anyLease = true
			case !hasKey(leases, l):
				ps.add(entry+".leases", "unknown lock-only lease %q: declare it under leases:", l)
			default:
				c.leases[l] = true
			}
		}
		if !validName(name) {
			ps.add(entry, "client names are lower-case letters, digits and '_', starting with a letter")
		}
		if name == Anonymous {
			ps.add(entry, "%q is reserved: the access log and the audit name callers without a client so", Anonymous)
		}
		if fc.TokenSHA256 == "" && fc.Certificate == nil && fc.JWT == nil {
			ps.add(entry, "say how the client proves who it is: token_sha256 (a bearer token), certificate (a client certificate) or jwt (a JWT bearer), one or more")
		}
		if fc.TokenSHA256 != "" {
			compileToken(ps, &p.clients, c, fc.TokenSHA256, entry)
		}
		if fc.Certificate != nil {
			compileCertificate(ps, &p.clients, c, fc.Certificate, entry)
		}
		if fc.JWT != nil {
			compileJWT(ps, &p.clients, c, fc.JWT, entry)
		}
		if len(fc.Operations) == 0 && fc.SQLRole == "" {
			ps.add(entry+".operations", "missing: list the operations the client may call, or [\"*\"] for all")
		}
		compileSQLAccess(ps, p, c, fc, entry)
		for _, op := range fc.Operations {
			switch {
			case op == "*":
				c.any = true
			case !hasKey(declared, op):
				ps.add(entry+".operations", "unknown operation %q", op)
			default:
				c.operations[op] = true
			}
		}
	}
}

// compileToken indexes c by the SHA-256 of its bearer token.
func compileToken(ps *problems, idx *clientIndex, c *Client, hexSum, entry string) {
	b, err := hex.DecodeString(hexSum)
	if err != nil || len(b) != sha256.Size {
		ps.add(entry+".token_sha256", "want the 64 hex digits of the SHA-256 of the client's bearer token (e.g. `printf %%s TOKEN | sha256sum`)")
		return
	}
	sum := [sha256.Size]byte(b)
	c.token = true
	if other, dup := idx.byToken[sum]; dup {
		ps.add(entry+".token_sha256", "same token as client %s", other.Name)
		return
	}
	idx.byToken[sum] = c
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

func (p *Policy) clientsByName() []*Client { return p.clients.all }

// proves says how c proves who it is, for the policy's description.
func (c *Client) proves() string {
	var ways []string
	if c.token {
		ways = append(ways, "bearer token")
	}
	if c.certificate != "" {
		ways = append(ways, "certificate "+c.certificate)
	}
	if c.jwt != "" {
		ways = append(ways, "JWT subject "+c.jwt)
	}
	return strings.Join(ways, ", ")
}
