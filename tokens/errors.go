package tokens

import (
	"errors"
	"fmt"
)

var (
	// ErrRejected is wrapped by *RejectedError: the authority did not issue
	// the token, or it belongs to another epoch.
	ErrRejected = errors.New("tokens: token rejected by the authority")
	// ErrBadResource means a resource name the authority refuses to key.
	ErrBadResource = errors.New("tokens: bad resource name")
)

// RejectedError says why the authority refused a token.
type RejectedError struct {
	Presented Token
	Reason    string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("tokens: token %s rejected: %s", e.Presented, e.Reason)
}

func (e *RejectedError) Unwrap() error { return ErrRejected }
