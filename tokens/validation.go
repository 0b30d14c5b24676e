package tokens

// Validation is how much of the authority's word a write needs on top of
// the fence.
type Validation int

const (
	// ValidateFence (the default) accepts only a token the gateway issued
	// for this resource and client: its signature says so, checked with
	// no etcd or PostgreSQL call. The fence then orders it.
	ValidateFence Validation = iota
	// ValidateHolder also checks, with a linearizable etcd read on every
	// write, that the token is the live holder of this very resource: an
	// expired holder is refused even when no successor has written yet.
	ValidateHolder
	// ValidateRevision takes a token as a number, for services that read
	// tokens from etcd themselves: its epoch is current and its revision
	// not in the future (an etcd read for one above any seen). Any caller
	// who can read a revision can write, and push the fence past the
	// holder's token: choose it knowingly.
	ValidateRevision
)

func (v Validation) String() string {
	switch v {
	case ValidateHolder:
		return "holder"
	case ValidateRevision:
		return "revision"
	}
	return "fence"
}
