package gateway

import (
	"net/http"
	"time"
)

// IdempotencyHeader carries a client-chosen key that makes a write execute
// at most once (IETF httpapi Idempotency-Key draft); ReplayedHeader marks
// an answer replayed from the key's first execution.
const (
	IdempotencyHeader = "Idempotency-Key"
	ReplayedHeader    = "Idempotent-Replayed"
	maxKeyLen         = 255
)

// DefaultIdempotencyRetention is how long a completed key is replayed.
const DefaultIdempotencyRetention = 24 * time.Hour

// idempotencyKey reads the optional Idempotency-Key header: an RFC 8941
// string ("…"), or for convenience the bare text, of printable ASCII.
func idempotencyKey(r *http.Request) (string, bool, error) {
	values := r.Header.Values(IdempotencyHeader)
	switch len(values) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", false, badRequest("%d %s headers: send exactly one", len(values), IdempotencyHeader)
	}
	k := values[0]
	if len(k) >= 2 && k[0] == '"' && k[len(k)-1] == '"' {
		k = k[1 : len(k)-1]
	}
	if k == "" || len(k) > maxKeyLen {
		return "", false, badRequest("%s must be 1 to %d characters", IdempotencyHeader, maxKeyLen)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e || k[i] == '"' || k[i] == '\\' {
			return "", false, badRequest("%s must be printable ASCII without quotes or backslashes", IdempotencyHeader)
		}
	}
	return k, true, nil
}
