package policy

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// Digest is the SHA-256 of the policy file, in hex: replicas that run one
// policy file report the same digest.
func (p *Policy) Digest() string { return hex.EncodeToString(p.digest[:]) }

// FenceSettings summarises what decides whether a token passes, per
// resource kind: its key, its comparison, its validation, its lock
// delay and its permits. Two replicas whose summaries differ can disagree on a write
// (one refuses an expired token another accepts); two whose files differ
// otherwise disagree on less.
func (p *Policy) FenceSettings() string {
	lines := make([]string, 0, len(p.Kinds))
	for _, r := range p.Kinds {
		lines = append(lines, fmt.Sprintf("%s: key %s, %s, validation %s, lock delay %s%s", r.Name, r.Template, r.Compare, r.Validation, r.LockDelay, permitsText(r.Permits)))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
