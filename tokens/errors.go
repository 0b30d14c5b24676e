package tokens

import (
	"errors"
	"fmt"
)

var (
	// ErrRejected is wrapped by *RejectedError: the authority did not issue
	// the token, or it belongs to another epoch.
	ErrRejected = errors.New("tokens: token rejected by the authority")
	// ErrUnavailable means etcd could not be asked; nothing was decided.
	ErrUnavailable = errors.New("tokens: authority unavailable")
	// ErrLeaseNotFound means the lease expired, was released or never existed.
	ErrLeaseNotFound = errors.New("tokens: lease not found")
	// ErrNotOwner means a lease taken by another client.
	ErrNotOwner = errors.New("tokens: lease belongs to another client")
	// ErrLocked is wrapped by *LockedError: another holder kept the lock for
	// the whole wait.
	ErrLocked = errors.New("tokens: resource is locked")
	// ErrBadResource means a resource name the authority refuses to key.
	ErrBadResource = errors.New("tokens: bad resource name")
	// ErrBadValue means a lock value over 4 KiB or with a NUL byte.
	ErrBadValue = errors.New("tokens: bad lock value: at most 4096 bytes, no NUL")
	// ErrBadLeaseID means a lease ID that is not a lease ID at all.
	ErrBadLeaseID = errors.New("tokens: bad lease id")
	// ErrBadTTL means a lease TTL out of the accepted range.
	ErrBadTTL = errors.New("tokens: bad lease ttl")
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

// LockedError names the holder that kept a resource locked.
type LockedError struct {
	Resource string
	Holder   Token // zero if the holder released between the wait and the look-up
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("tokens: %s is locked by token %s", e.Resource, e.Holder)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// unavailable marks an etcd failure so callers can answer 503 and retry.
func unavailable(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}
