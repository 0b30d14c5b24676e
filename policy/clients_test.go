package policy

import (
	"strings"
	"testing"
)

// TestAnonymousIsReserved: the access log and the audit name callers
// without a client "anonymous", so no client may be called so.
func TestAnonymousIsReserved(t *testing.T) {
	src := goodPolicy + "clients:\n  anonymous: {token_sha256: \"" + strings.Repeat("a", 64) + "\", operations: [debit]}\n"
	_, err := Parse("anon.yaml", []byte(src))
	if err == nil || !strings.Contains(err.Error(), `clients.anonymous: "anonymous" is reserved`) {
		t.Fatalf("a client called anonymous: %v, want refused as reserved", err)
	}
}
