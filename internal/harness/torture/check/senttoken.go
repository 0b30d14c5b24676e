package check

import (
	"maps"
	"slices"
	"strings"
)

// KindWrongToken is a row that carries a token its write was not sent
// with: the gateway bound one write's statements to another token (a
// coalesced transaction or a group commit that mixed up its writes' tokens, a
// role's token on the other role's row). Every other check takes the
// row's token as the write's; this one holds the row to the worker's
// record of what it sent.
const KindWrongToken = "wrong-token"

// checkSentTokens compares each row's token with the tokens its intent
// was invoked with (a retry sends the token again, so any invoke may
// match). A transfer's row X:from or X:to is held to that role's invoke.
// An intent whose invokes carry no readable token is not judged: the
// history then has nothing to hold the row to.
func (c *checker) checkSentTokens() {
	for _, in := range slices.Sorted(maps.Keys(c.rowsByIntent)) {
		sent := c.sentTokens(in)
		if len(sent) == 0 {
			continue
		}
		for _, r := range c.rowsByIntent[in] {
			if !slices.Contains(sent, [2]int64{r.Epoch, r.Revision}) {
				c.report(KindWrongToken, r.Resource, []Row{r}, []string{in},
					"row %d (intent %s, worker %d) carries token %s, but its write was sent with %s",
					r.ID, in, r.Worker, r.token(), formatTokens(sent))
			}
		}
	}
}

// sentTokens are the readable tokens of intent's invokes, E and R.
func (c *checker) sentTokens(intent string) [][2]int64 {
	var sent [][2]int64
	for _, i := range c.byIntent[intent] {
		e := c.history[i]
		if e.Type != TypeInvoke {
			continue
		}
		if epoch, rev, ok := parseToken(e.Token); ok && !slices.Contains(sent, [2]int64{epoch, rev}) {
			sent = append(sent, [2]int64{epoch, rev})
		}
	}
	return sent
}

func formatTokens(ts [][2]int64) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = Row{Epoch: t[0], Revision: t[1]}.token()
	}
	return strings.Join(s, " or ")
}
