package policy

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/tokens"
)

// The SQL front (package sqlfront) lets a client's unchanged application
// write over PostgreSQL's wire protocol. A client that may use it says
// which database role its sessions run as (sql_role: a role with grants
// on the application's tables and none on fencegw's), and which kinds of
// resource its transactions may fence (sql_resources). A client without
// sql_role cannot use the front. The names a client may fence from the
// front it may also lease, as it may lease the names its operations
// write: a token is only ever granted for a name its holder may fence.

// sqlRoleRE is an unquoted PostgreSQL identifier in lower case: the role
// name the front logs in as, which a quoted name with other characters
// would only make harder to grant and to read in pg_stat_activity.
var sqlRoleRE = regexp.MustCompile(`^[a-z_][a-z0-9_$]{0,62}$`)

// sqlAccess is what a client may do on the SQL front.
type sqlAccess struct {
	role      string        // "": the client may not use the front
	resources []sqlResource // the kinds it may fence, by name
}

// sqlResource is a kind of resource a client may fence from the front,
// and what its names look like: the kind's key, each placeholder one or
// more characters, as a lock-only lease's.
type sqlResource struct {
	kind    *ResourceKind
	matcher *keyMatcher
}

// SQLRole is the database role the client's sessions on the SQL front
// run as; "" if the client may not use the front.
func (c *Client) SQLRole() string { return c.sql.role }

// sqlKind returns the kind of name if c may fence it from the front.
func (c *Client) sqlKind(name string) *ResourceKind {
	for _, r := range c.sql.resources {
		if _, ok := r.matcher.match(name); ok {
			return r.kind
		}
	}
	return nil
}

// SQLResource returns the kind of the resource name if client c may
// fence it from the SQL front, or an error wrapping ErrUnknownLease or
// ErrLeaseNotAllowed that says why not.
func (p *Policy) SQLResource(c *Client, name string) (*ResourceKind, error) {
	if err := tokens.CheckResource(name); err != nil {
		return nil, err
	}
	if k := c.sqlKind(name); k != nil {
		return k, nil
	}
	shown := clip.String(name, 64)
	if k := p.KindOf(name); k != nil {
		return nil, fmt.Errorf("%w: client %s may not fence %q from the SQL front: it is a %s, which its sql_resources do not list",
			ErrLeaseNotAllowed, c.Name, shown, k.Name)
	}
	return nil, fmt.Errorf("%w: %q is not a name of any resource of the policy", ErrUnknownLease, shown)
}

// compileSQLAccess reads a client's sql_role and sql_resources.
func compileSQLAccess(ps *problems, p *Policy, c *Client, fc fileClient, entry string) {
	if fc.SQLRole == "" {
		if len(fc.SQLResources) > 0 {
			ps.add(entry+".sql_resources", "a client fences from the SQL front as its sql_role: declare sql_role too")
		}
		return
	}
	switch {
	case !sqlRoleRE.MatchString(fc.SQLRole):
		ps.add(entry+".sql_role", "want a PostgreSQL role name in lower case (letters, digits, '_' and '$', starting with a letter or '_'), at most 63")
		return
	case strings.HasPrefix(fc.SQLRole, "pg_") || strings.HasPrefix(fc.SQLRole, "fencegw"):
		ps.add(entry+".sql_role", "%q is not an application's role: pg_ roles are PostgreSQL's, fencegw ones the gateway's", fc.SQLRole)
		return
	}
	c.sql.role = fc.SQLRole
	kinds := fc.SQLResources
	if len(kinds) == 1 && kinds[0] == "*" {
		kinds = nil
		for _, name := range sortedKeys(p.Kinds) {
			if p.Kinds[name].Permits == 0 {
				kinds = append(kinds, name)
			}
		}
	}
	for _, name := range kinds {
		k := p.Kinds[name]
		switch {
		case name == "*":
			ps.add(entry+".sql_resources", `"*" stands alone: every kind of the policy`)
		case k == nil:
			ps.add(entry+".sql_resources", "unknown kind %q", name)
		case k.Permits > 0:
			ps.add(entry+".sql_resources", "%s is a semaphore: the SQL front fences exclusive locks only", name)
		default:
			c.sql.resources = append(c.sql.resources, sqlResource{kind: k, matcher: placeholderMatcher(k.Template)})
		}
	}
}

// sqlText describes c's use of the SQL front for Describe; "" if none.
func (c *Client) sqlText() string {
	if c.sql.role == "" {
		return ""
	}
	names := make([]string, len(c.sql.resources))
	for i, r := range c.sql.resources {
		names[i] = r.kind.Name
	}
	fenced := "nothing"
	if len(names) > 0 {
		fenced = strings.Join(names, ", ")
	}
	return fmt.Sprintf("client %s may use the SQL front as role %s, fencing: %s\n", c.Name, c.sql.role, fenced)
}
