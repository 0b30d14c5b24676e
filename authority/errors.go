package authority

import (
	"errors"
	"fmt"

	"github.com/fencegw/fencegw/outcome"
	"github.com/fencegw/fencegw/tokens"
)

var (
	// ErrUnavailable means etcd could not be asked; nothing was decided.
	ErrUnavailable = outcome.New("authority: authority unavailable", outcome.NotApplied)
	// ErrLeaseNotFound means the lease expired, was released or never existed.
	ErrLeaseNotFound = errors.New("authority: lease not found")
	// ErrNotOwner means a lease taken by another client.
	ErrNotOwner = errors.New("authority: lease belongs to another client")
	// ErrLocked is wrapped by *LockedError: another holder kept the lock for
	// the whole wait.
	ErrLocked = errors.New("authority: resource is locked")
	// ErrBadValue means a lock value over 4 KiB or with a NUL byte.
	ErrBadValue = errors.New("authority: bad lock value: at most 4096 bytes, no NUL")
	// ErrBadLeaseID means a lease ID that is not a lease ID at all.
	ErrBadLeaseID = errors.New("authority: bad lease id")
	// ErrTooManyLeases means the client holds as many leases as it may.
	ErrTooManyLeases = errors.New("authority: too many leases")
	// ErrBadTTL means a lease TTL out of the accepted range.
	ErrBadTTL = errors.New("authority: bad lease ttl")
	// ErrForeignKey means a key of fencegw's in etcd (the epoch, the
	// identity) holds what fencegw never writes there: someone else wrote
	// it, and the authority cannot be trusted until an epoch bump.
	ErrForeignKey = errors.New("authority: etcd holds a fencegw key fencegw did not write")
)

// LockedError names the holder that kept a resource locked.
type LockedError struct {
	Resource string
	Holder   tokens.Token // zero if the holder released between the wait and the look-up
}

func (e *LockedError) Error() string {
	if e.Holder.IsZero() {
		return fmt.Sprintf("authority: %s is locked", e.Resource)
	}
	return fmt.Sprintf("authority: %s is locked by token %s", e.Resource, e.Holder)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// unavailable marks an etcd failure so callers can answer 503 and retry.
func unavailable(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}
