package policy

import (
	"fmt"
	"strings"

	"github.com/fencegw/fencegw/internal/clip"
)

// LeasePrefix says whether client c may follow every lease name that
// starts with prefix (a watch of a prefix; c nil: authentication is off).
// A template may produce such a name if its literal start and prefix
// agree as far as both go; the prefix is c's if some template may, and c
// may lease every one that may. The rule is conservative: a template
// whose values could never fit the prefix still counts, so a prefix
// another client's names might start with is refused, never shown. It
// returns an error wrapping ErrUnknownLease or ErrLeaseNotAllowed.
func (p *Policy) LeasePrefix(c *Client, prefix string) error {
	var found bool
	var denied []string
	check := func(m *keyMatcher, allowed bool, kind string) {
		if !m.mayStartWith(prefix) {
			return
		}
		found = true
		if !allowed {
			denied = appendNew(denied, kind)
		}
	}
	for _, w := range p.writers {
		check(w.matcher, c == nil || c.MayCall(w.op.Name), "a "+w.role.Kind.Name)
	}
	for _, l := range p.lockOnly {
		check(l.matcher, c == nil || c.mayLease(l.name), "the lock-only lease "+l.name)
	}
	shown := clip.String(prefix, 64)
	switch {
	case !found:
		return fmt.Errorf("%w: no name the policy's templates produce (%s) starts with %q", ErrUnknownLease, p.leaseKeys(), shown)
	case len(denied) > 0:
		return fmt.Errorf("%w: client %s may not follow the prefix %q: names starting with it may be %s, which it may not lease",
			ErrLeaseNotAllowed, c.Name, shown, strings.Join(denied, " or "))
	}
	return nil
}

// mayStartWith reports whether a name m matches may start with prefix,
// judging by the literal text m's names start with.
func (m *keyMatcher) mayStartWith(prefix string) bool {
	var lit strings.Builder
	fixed := true // the template is all literal
	for _, part := range m.parts {
		if part.value {
			fixed = false
			break
		}
		lit.WriteString(part.literal)
	}
	start := lit.String()
	if fixed {
		return strings.HasPrefix(start, prefix)
	}
	return strings.HasPrefix(start, prefix) || strings.HasPrefix(prefix, start)
}
