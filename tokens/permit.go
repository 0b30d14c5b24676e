package tokens

import (
	"strconv"
	"strings"
)

// MaxPermits bounds a semaphore's permits. Each permit is a slot with a
// fence row of its own, and a grant reads the slots to find a free one:
// more than this is a mistake, not a pool.
const MaxPermits = 1000

// PermitSeparator joins a semaphore's name and a permit's slot into the
// resource the slot's lock and fence are kept under.
const PermitSeparator = "#"

// PermitResource is the resource of slot permit of semaphore: where the
// slot's holder is kept and the fence its writes advance, e.g.
// "pool/p1#2". A permit token (Token.Permit > 0) is signed for it.
func PermitResource(semaphore string, permit int) string {
	return semaphore + PermitSeparator + strconv.Itoa(permit)
}

// SplitPermitResource is PermitResource's inverse: ok is false for a
// resource that does not end in "#P" with P 1 to MaxPermits spelt as
// PermitResource spells it.
func SplitPermitResource(resource string) (semaphore string, permit int, ok bool) {
	i := strings.LastIndex(resource, PermitSeparator)
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(resource[i+1:])
	if err != nil || n < 1 || n > MaxPermits || strconv.Itoa(n) != resource[i+1:] {
		return "", 0, false
	}
	return resource[:i], n, true
}
