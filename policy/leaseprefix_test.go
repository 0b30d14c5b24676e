package policy

import (
	"errors"
	"testing"
)

// TestLeasePrefix: a prefix is a client's to follow when every key that
// may produce a name starting with it is one the client may lease.
func TestLeasePrefix(t *testing.T) {
	p := leasePolicyParsed(t)
	client := func(name string) *Client {
		for _, c := range p.clientsByName() {
			if c.Name == name {
				return c
			}
		}
		t.Fatalf("no client %s", name)
		return nil
	}
	tests := []struct {
		name, prefix, client string
		err                  error
	}{
		{"a key's literal start", "account/", "billing", nil},
		{"within a key's values", "account/acct-1", "billing", nil},
		{"shorter than a key's literal start", "acc", "billing", nil},
		{"another client's key", "account/", "scheduler", ErrLeaseNotAllowed},
		{"a lock-only entry listed", "election/", "scheduler", nil},
		{"a lock-only entry not listed", "election/", "billing", ErrLeaseNotAllowed},
		{"two keys, one the client's", "j", "billing", ErrLeaseNotAllowed},
		{"everything, by the operator", "a", "operator", nil},
		{"no key starts so", "zzz", "operator", ErrUnknownLease},
		{"past a key's literal start, off its shape", "accounts", "billing", ErrUnknownLease},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.LeasePrefix(client(tt.client), tt.prefix)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("LeasePrefix(%s, %q) = %v, want %v", tt.client, tt.prefix, err, tt.err)
			}
		})
	}
	if err := p.LeasePrefix(nil, "account/"); err != nil {
		t.Errorf("authentication off: %v", err)
	}
}
