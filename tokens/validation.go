package tokens

// Validation is how much of the authority's word a write needs on top of
// the fence.
type Validation int

const (
	// ValidateFence checks the token was issued: current epoch, revision
	// not in the future. It costs an etcd read only for a token newer than
	// any revision the gateway has seen.
	ValidateFence Validation = iota
	// ValidateHolder also checks, with a linearizable etcd read on every
	// write, that the token is the live holder of this very resource: an
	// expired holder is refused even when no successor has written yet,
	// and a token from another resource's lock is refused.
	ValidateHolder
)

func (v Validation) String() string {
	if v == ValidateHolder {
		return "holder"
	}
	return "fence"
}
