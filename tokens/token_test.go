package tokens

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Token
		ok   bool
	}{
		{"simple", "1:42", Token{1, 42}, true},
		{"large", "7:9223372036854775807", Token{7, 9223372036854775807}, true},
		{"no colon", "42", Token{}, false},
		{"empty", "", Token{}, false},
		{"empty epoch", ":42", Token{}, false},
		{"empty revision", "1:", Token{}, false},
		{"zero epoch", "0:42", Token{}, false},
		{"zero revision", "1:0", Token{}, false},
		{"leading zero", "1:042", Token{}, false},
		{"sign", "1:+42", Token{}, false},
		{"negative", "1:-42", Token{}, false},
		{"space", "1: 42", Token{}, false},
		{"trailing space", "1:42 ", Token{}, false},
		{"two colons", "1:4:2", Token{}, false},
		{"overflow", "1:9223372036854775808", Token{}, false},
		{"too long", "1:12345678901234567890", Token{}, false},
		{"hex", "1:0x2a", Token{}, false},
		{"unicode digit", "1:٤٢", Token{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.ok {
				if err != nil || got != tt.want {
					t.Fatalf("Parse(%q) = %v, %v; want %v, nil", tt.in, got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse(%q) = %v, %v; want ErrMalformed", tt.in, got, err)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	tests := []struct {
		a, b Token
		want int
	}{
		{Token{1, 41}, Token{1, 42}, -1},
		{Token{1, 42}, Token{1, 42}, 0},
		{Token{1, 43}, Token{1, 42}, 1},
		{Token{2, 1}, Token{1, 9999}, 1}, // a new epoch beats any old revision
		{Token{1, 9999}, Token{2, 1}, -1},
	}
	for _, tt := range tests {
		if got := tt.a.Compare(tt.b); got != tt.want {
			t.Errorf("%v.Compare(%v) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestStringRoundTrip(t *testing.T) {
	for _, tok := range []Token{{1, 1}, {1, 42}, {3, 9223372036854775807}} {
		got, err := Parse(tok.String())
		if err != nil || got != tok {
			t.Errorf("Parse(%q) = %v, %v; want %v", tok.String(), got, err, tok)
		}
	}
}

func TestCheckResource(t *testing.T) {
	long := make([]byte, MaxResourceLen+1)
	for i := range long {
		long[i] = 'a'
	}
	tests := []struct {
		in string
		ok bool
	}{
		{"account/acct-1", true},
		{"recon/2026-10-18", true},
		{"with space", true},
		{"", false},
		{string(long), false},
		{string(long[:MaxResourceLen]), true},
		{"tab\there", false},
		{"nl\n", false},
		{"bad\xff", false},
	}
	for _, tt := range tests {
		err := CheckResource(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("CheckResource(%q) = %v, want ok=%t", tt.in, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrBadResource) {
			t.Errorf("CheckResource(%q) = %v, want ErrBadResource", tt.in, err)
		}
	}
}

func TestReconcile(t *testing.T) {
	rec := Record{Epoch: 1, ClusterID: "abc", MaxRevision: 100}
	tests := []struct {
		name   string
		view   View
		seen   int64
		halted bool
	}{
		{"same cluster, moved on", View{Epoch: 1, ClusterID: "abc", Revision: 120}, 110, false},
		{"first sight of the cluster", View{Epoch: 1, ClusterID: "abc", Revision: 100}, 0, false},
		{"revision went back", View{Epoch: 1, ClusterID: "abc", Revision: 90}, 0, true},
		{"revision below what this process saw", View{Epoch: 1, ClusterID: "abc", Revision: 105}, 110, true},
		{"another cluster", View{Epoch: 1, ClusterID: "def", Revision: 500}, 0, true},
		{"epoch behind", View{Epoch: 0, ClusterID: "abc", Revision: 500}, 0, true},
		{"epoch ahead, PostgreSQL not told", View{Epoch: 2, ClusterID: "abc", Revision: 500}, 0, true},
	}
	for _, tt := range tests {
		next, err := Reconcile(tt.view, rec, tt.seen)
		if got := errors.Is(err, ErrHalted); got != tt.halted {
			t.Errorf("%s: Reconcile err = %v, want halted=%t", tt.name, err, tt.halted)
		}
		if !tt.halted && (next.Epoch != tt.view.Epoch || next.MaxRevision != tt.view.Revision || next.ClusterID != tt.view.ClusterID) {
			t.Errorf("%s: record = %+v", tt.name, next)
		}
	}
	if _, err := Reconcile(View{Epoch: 1, ClusterID: "x", Revision: 1}, Record{Epoch: 1}, 0); err != nil {
		t.Errorf("a record without a cluster yet must accept the first one: %v", err)
	}
}
