package tokens

import (
	"fmt"

	"github.com/fencegw/fencegw/outcome"
)

var (
	// ErrRejected is wrapped by *RejectedError: the authority did not issue
	// the token, or it belongs to another epoch.
	ErrRejected = outcome.New("tokens: token rejected by the authority", outcome.Refused)
	// ErrBadResource means a resource name the authority refuses to key.
	ErrBadResource = outcome.New("tokens: bad resource name", outcome.Refused)
)

// RejectedError says why the authority refused a token.
type RejectedError struct {
	Presented Token
	Reason    string
	// Issued: the authority did issue the token (its signature or its
	// revision checks out) but does not vouch for it now (an old epoch, a
	// holder whose lease ended, a retired key). False: the authority never
	// issued it.
	Issued bool
	// Retired: the token's signature is by a signing key the authority has
	// retired. It was issued (Issued is true), and is refused for good:
	// its holder needs a new lease, not another try.
	Retired bool
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("tokens: token %s rejected: %s", e.Presented, e.Reason)
}

func (e *RejectedError) Unwrap() error { return ErrRejected }

func (e *RejectedError) Outcome() outcome.Outcome { return outcome.Refused }

// SettlesKey: a refusal of a token the authority issued is decided
// against its word now, which changes: it settles the key. One it never
// issued does not (storing it would let whoever guesses a key spoil it).
func (e *RejectedError) SettlesKey() bool { return e.Issued }
