package check

import (
	"errors"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// KindGrantNotNewer: a lease granted on a resource carries a token not
// newer than one granted on it before it was asked for, or two leases of
// one resource were granted one token. A token is the etcd revision at
// which its lock key was created, and etcd's revisions only grow: a lease
// asked for after another's grant was answered has a newer token.
const KindGrantNotNewer = "grant-not-newer"

// Grant is one line of a holder's log of grants: a lease it was granted,
// and when it asked for it and had the answer.
type Grant struct {
	Worker   int          `json:"worker"`
	Resource string       `json:"resource"`
	Token    tokens.Token `json:"token"` // unsigned: E:R
	// Asked is read before the acquisition was sent, Granted after its
	// answer came: the lock key was created between the two.
	Asked   time.Time `json:"asked"`
	Granted time.Time `json:"granted"`
	// End is how the holder meant to let the lease go (GrantEnd…).
	End string `json:"end,omitempty"`
}

// How a holder lets a lease go (Grant.End).
const (
	// GrantEndRelease: released once its write was answered.
	GrantEndRelease = "release"
	// GrantEndExpire: left to expire once its write was answered, its
	// keepalives no longer sent, as a holder that crashed.
	GrantEndExpire = "expire"
	// GrantEndPause: its keepalives stopped before its write, which it
	// sent once the client said the lease had ended, as a holder paused
	// past its TTL does.
	GrantEndPause = "pause"
)

// ReadGrants reads one holder's log of grants, one JSON Grant per line,
// as ReadHistory reads a history.
func ReadGrants(r io.Reader) ([]Grant, error) { return readLines(r, parseGrant) }

func parseGrant(line []byte) (Grant, error) {
	g, err := decodeStrict[Grant](line)
	if err != nil {
		return Grant{}, err
	}
	if g.Resource == "" || g.Token == (tokens.Token{}) {
		return Grant{}, errors.New("grant without a resource or a token")
	}
	if g.Token.Signed() {
		return Grant{}, errors.New("a signed token in a log of grants")
	}
	return g, nil
}

// checkGrants holds each resource's grants to etcd's order: a grant asked
// for after another was answered has the newer token, and no two grants
// share one. Grants whose calls overlapped may come in either order.
func (c *checker) checkGrants(grants []Grant) {
	byResource := map[string][]Grant{}
	for _, g := range grants {
		byResource[g.Resource] = append(byResource[g.Resource], g)
	}
	for _, res := range slices.Sorted(maps.Keys(byResource)) {
		gs := byResource[res]
		seen := map[tokens.Token]Grant{}
		for _, g := range gs {
			if first, ok := seen[g.Token]; ok {
				c.report(KindGrantNotNewer, res, c.rowsOf(res, g.Token), nil,
					"workers %d and %d were each granted %s on %s (asked at %s and %s)",
					first.Worker, g.Worker, g.Token, res, first.Asked.Format(time.RFC3339Nano), g.Asked.Format(time.RFC3339Nano))
				continue
			}
			seen[g.Token] = g
		}
		// Sweep the grants by when they were asked for, beside those
		// answered before: the newest token answered so far bounds the
		// next ask's from below.
		asked := slices.SortedStableFunc(slices.Values(gs), func(a, b Grant) int { return a.Asked.Compare(b.Asked) })
		answered := slices.SortedStableFunc(slices.Values(gs), func(a, b Grant) int { return a.Granted.Compare(b.Granted) })
		var newest *Grant
		k := 0
		for _, g := range asked {
			for ; k < len(answered) && answered[k].Granted.Before(g.Asked); k++ {
				if newest == nil || answered[k].Token.Compare(newest.Token) > 0 {
					newest = &answered[k]
				}
			}
			if newest != nil && g.Token.Compare(newest.Token) < 0 {
				c.report(KindGrantNotNewer, res, c.rowsOf(res, g.Token), nil,
					"worker %d was granted %s on %s, asked for at %s, after worker %d's grant of the newer %s was answered at %s",
					g.Worker, g.Token, res, g.Asked.Format(time.RFC3339Nano), newest.Worker, newest.Token, newest.Granted.Format(time.RFC3339Nano))
			}
		}
	}
}
