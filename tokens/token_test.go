package tokens

import (
	"errors"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Token
		ok   bool
	}{
		{"simple", "1:42", Token{Epoch: 1, Revision: 42}, true},
		{"large", "7:9223372036854775807", Token{Epoch: 7, Revision: 9223372036854775807}, true},
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
		{"permit", "1:42#3", Token{Epoch: 1, Revision: 42, Permit: 3}, true},
		{"last permit", "1:42#1000", Token{Epoch: 1, Revision: 42, Permit: MaxPermits}, true},
		{"permit zero", "1:42#0", Token{}, false},
		{"permit above the most", "1:42#1001", Token{}, false},
		{"permit leading zero", "1:42#03", Token{}, false},
		{"permit empty", "1:42#", Token{}, false},
		{"two permits", "1:42#3#4", Token{}, false},
		{"permit on the epoch", "1#3:42", Token{}, false},
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
		{Token{Epoch: 1, Revision: 41}, Token{Epoch: 1, Revision: 42}, -1},
		{Token{Epoch: 1, Revision: 42}, Token{Epoch: 1, Revision: 42}, 0},
		{Token{Epoch: 1, Revision: 43}, Token{Epoch: 1, Revision: 42}, 1},
		{Token{Epoch: 2, Revision: 1}, Token{Epoch: 1, Revision: 9999}, 1}, // a new epoch beats any old revision
		{Token{Epoch: 1, Revision: 9999}, Token{Epoch: 2, Revision: 1}, -1},
	}
	for _, tt := range tests {
		if got := tt.a.Compare(tt.b); got != tt.want {
			t.Errorf("%v.Compare(%v) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestStringRoundTrip(t *testing.T) {
	signed := Token{Epoch: 2, Revision: 7, Sig: Sig{1, 2, 3, 255}}
	for _, tok := range []Token{{Epoch: 1, Revision: 1}, {Epoch: 1, Revision: 42}, {Epoch: 3, Revision: 9223372036854775807}, signed} {
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
		{" leading", false},
		{"trailing ", false},
		{"zero\u200bwidth", false},
		{"joiner\u200d", false},
		{"bom\ufeff", false},
		{"replacement\ufffd", false},
		{"café/naïve", true},
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
	rec := Record{Epoch: 1, ClusterID: "abc", Identity: "id1", MaxRevision: 100}
	tests := []struct {
		name   string
		view   View
		seen   int64
		halted bool
	}{
		{"same cluster, moved on", View{Epoch: 1, ClusterID: "abc", Identity: "id1", Revision: 120}, 110, false},
		{"first sight of the cluster", View{Epoch: 1, ClusterID: "abc", Identity: "id1", Revision: 100}, 0, false},
		{"revision went back", View{Epoch: 1, ClusterID: "abc", Identity: "id1", Revision: 90}, 0, true},
		{"revision below what this process saw", View{Epoch: 1, ClusterID: "abc", Identity: "id1", Revision: 105}, 110, true},
		{"another cluster", View{Epoch: 1, ClusterID: "def", Identity: "id1", Revision: 500}, 0, true},
		{"same cluster ID, data wiped, revision already past", View{Epoch: 1, ClusterID: "abc", Identity: "id2", Revision: 500}, 0, true},
		{"same cluster ID, identity gone", View{Epoch: 1, ClusterID: "abc", Revision: 500}, 0, true},
		{"epoch behind", View{Epoch: 0, ClusterID: "abc", Identity: "id1", Revision: 500}, 0, true},
		{"epoch ahead, PostgreSQL not told", View{Epoch: 2, ClusterID: "abc", Identity: "id1", Revision: 500}, 0, true},
	}
	for _, tt := range tests {
		next, err := Reconcile(tt.view, rec, tt.seen)
		if got := errors.Is(err, ErrHalted); got != tt.halted {
			t.Errorf("%s: Reconcile err = %v, want halted=%t", tt.name, err, tt.halted)
		}
		if !tt.halted && (next.Epoch != tt.view.Epoch || next.MaxRevision != tt.view.Revision || next.ClusterID != tt.view.ClusterID || next.Identity != tt.view.Identity) {
			t.Errorf("%s: record = %+v", tt.name, next)
		}
	}
	if _, err := Reconcile(View{Epoch: 1, ClusterID: "x", Revision: 1}, Record{Epoch: 1}, 0); err != nil {
		t.Errorf("a record without a cluster yet must accept the first one: %v", err)
	}
	if next, err := Reconcile(View{Epoch: 1, ClusterID: "x", Identity: "id", Revision: 1}, Record{Epoch: 1, ClusterID: "x"}, 0); err != nil || next.Identity != "id" {
		t.Errorf("a record from before identities must take the cluster's: %+v, %v", next, err)
	}
}

func TestSignedTokens(t *testing.T) {
	key := Key{Secret: []byte("0123456789abcdef0123456789abcdef")}
	other := Key{Secret: []byte("fedcba9876543210fedcba9876543210")}
	ring, err := NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	tok := ring.Sign(Token{Epoch: 1, Revision: 42}, "account/acct-1", "billing")
	if !tok.Signed() || tok.Compare(Token{Epoch: 1, Revision: 42}) != 0 || tok.Unsigned() != (Token{Epoch: 1, Revision: 42}) {
		t.Fatalf("signed token %v: want signed, ordered as 1:42", tok)
	}
	text := tok.String()
	if parsed, err := Parse(text); err != nil || parsed != tok || len(text) != len("1:42:")+22 {
		t.Fatalf("Parse(%q) = %v, %v", text, parsed, err)
	}
	rotated, _ := NewKeyring(other, key) // a new key signs, the old one still verifies
	retired, _ := NewKeyring(other)
	for _, tt := range []struct {
		name             string
		ring             *Keyring
		tok              Token
		resource, client string
		want             bool
	}{
		{"as granted", ring, tok, "account/acct-1", "billing", true},
		{"after a rotation", rotated, tok, "account/acct-1", "billing", true},
		{"signed after the rotation", rotated, rotated.Sign(tok.Unsigned(), "account/acct-1", "billing"), "account/acct-1", "billing", true},
		{"its key retired", retired, tok, "account/acct-1", "billing", false},
		{"another resource", ring, tok, "account/acct-2", "billing", false},
		{"another client", ring, tok, "account/acct-1", "ops", false},
		{"another revision", ring, Token{Epoch: 1, Revision: 43, Sig: tok.Sig}, "account/acct-1", "billing", false},
		{"another epoch", ring, Token{Epoch: 2, Revision: 42, Sig: tok.Sig}, "account/acct-1", "billing", false},
		{"unsigned", ring, tok.Unsigned(), "account/acct-1", "billing", false},
		{"a resource and client that run together", ring, ring.Sign(tok.Unsigned(), "a", "bc"), "ab", "c", false},
	} {
		if got := tt.ring.Verify(tt.tok, tt.resource, tt.client); got != tt.want {
			t.Errorf("%s: Verify = %t, want %t", tt.name, got, tt.want)
		}
	}
	if _, err := NewKeyring(Key{Secret: []byte("short")}); err == nil {
		t.Error("a 5-byte key was accepted")
	}
	// A key whose time has not come verifies but does not sign yet.
	later, _ := NewKeyring(Key{Secret: other.Secret, SignAfter: time.Now().Add(time.Hour)}, key)
	if signed := later.Sign(tok.Unsigned(), "account/acct-1", "billing"); signed != tok {
		t.Errorf("signed %v before the new key's time, want %v (the old key's)", signed, tok)
	}
	if early := rotated.Sign(tok.Unsigned(), "account/acct-1", "billing"); !later.Verify(early, "account/acct-1", "billing") {
		t.Error("a key not yet signing must already verify")
	}
	// Keys by ID: the one that signs now, and a chosen one.
	named, _ := NewKeyring(Key{ID: "2", Secret: other.Secret, SignAfter: time.Now().Add(time.Hour)}, Key{ID: "1", Secret: key.Secret})
	if named.Signer() != "1" {
		t.Errorf("Signer = %q, want 1: the newer key's time has not come", named.Signer())
	}
	if signed, ok := named.SignWith("1", tok.Unsigned(), "account/acct-1", "billing"); !ok || signed != tok {
		t.Errorf("SignWith(1) = %v, %t; want %v", signed, ok, tok)
	}
	if signed, ok := named.SignWith("2", tok.Unsigned(), "account/acct-1", "billing"); !ok || signed == tok || !named.Verify(signed, "account/acct-1", "billing") {
		t.Errorf("SignWith(2) = %v, %t; want the newer key's signature", signed, ok)
	}
	if _, ok := named.SignWith("3", tok.Unsigned(), "account/acct-1", "billing"); ok {
		t.Error("SignWith of a key the keyring lacks signed")
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"1:42":                                "1:42",
		"1:9223372036854775807":               "1:9223372036854775807",
		"2:30:FN3o1-CryckydywaSMvcWw":         "2:30:…",
		`"2:30:FN3o1-CryckydywaSMvcWw"`:       `"2:30:…"`,
		"2:30:FN3o1-CryckydywaSMvcWw==":       "2:30:…",
		"2:30:FN3o1+Cryckydywa/MvcWw":         "2:30:…",
		"2:30:FN3o1-Cryck.ydywaSMvcWw":        "2:30:…",
		"12:30:x, 3:4":                        "12:30:…, 3:4",
		`from="1:2:FN3o1-CryckydywaSMvcWw";a`: `from="1:2:…";a`,
		"two words, ünïcode":                  "two words, ünïcode",
		"2:30#3:FN3o1-Cryck.ydywaSMvcWw":      "2:30#3:…",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestZeroSignatureIsMalformed: E:R with a signature of zeros would read
// as the unsigned E:R, a second spelling of one token.
func TestZeroSignatureIsMalformed(t *testing.T) {
	if tok, err := Parse("1:42:AAAAAAAAAAAAAAAAAAAAAA"); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Parse of a zero signature = %v, %v; want ErrMalformed", tok, err)
	}
}

// TestPermitTokens: a permit's token is bound to its slot and is never a
// lock's token, nor another slot's, whatever the resources are called.
func TestPermitTokens(t *testing.T) {
	ring, err := NewKeyring(Key{Secret: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	slot2 := PermitResource("pool/p1", 2)
	tok := ring.Sign(Token{Epoch: 1, Revision: 42, Permit: 2}, slot2, "worker")
	text := tok.String()
	if parsed, err := Parse(text); err != nil || parsed != tok || text[:len("1:42#2:")] != "1:42#2:" {
		t.Fatalf("Parse(%q) = %v, %v; want %v", text, parsed, err, tok)
	}
	lockTok := ring.Sign(Token{Epoch: 1, Revision: 42}, slot2, "worker") // a lock on a resource named like the slot
	for _, tt := range []struct {
		name     string
		tok      Token
		resource string
		want     bool
	}{
		{"as granted", tok, slot2, true},
		{"another slot's resource", Token{Epoch: 1, Revision: 42, Permit: 3, Sig: tok.Sig}, PermitResource("pool/p1", 3), false},
		{"its permit dropped", Token{Epoch: 1, Revision: 42, Sig: tok.Sig}, slot2, false},
		{"a lock's signature with a permit added", Token{Epoch: 1, Revision: 42, Permit: 2, Sig: lockTok.Sig}, slot2, false},
	} {
		if got := ring.Verify(tt.tok, tt.resource, "worker"); got != tt.want {
			t.Errorf("%s: Verify = %t, want %t", tt.name, got, tt.want)
		}
	}
	if tok.Unsigned() != (Token{Epoch: 1, Revision: 42, Permit: 2}) || tok.Compare(Token{Epoch: 1, Revision: 42}) != 0 {
		t.Errorf("Unsigned/Compare of %v: the permit is shown, and ordered by epoch and revision alone", tok)
	}
}

func TestSplitPermitResource(t *testing.T) {
	for _, tt := range []struct {
		in        string
		semaphore string
		permit    int
		ok        bool
	}{
		{"pool/p1#2", "pool/p1", 2, true},
		{"a#b#1000", "a#b", 1000, true},
		{"pool/p1#0", "", 0, false},
		{"pool/p1#1001", "", 0, false},
		{"pool/p1#02", "", 0, false},
		{"pool/p1#", "", 0, false},
		{"#2", "", 0, false},
		{"pool/p1", "", 0, false},
	} {
		sem, permit, ok := SplitPermitResource(tt.in)
		if sem != tt.semaphore || permit != tt.permit || ok != tt.ok {
			t.Errorf("SplitPermitResource(%q) = %q, %d, %t; want %q, %d, %t", tt.in, sem, permit, ok, tt.semaphore, tt.permit, tt.ok)
		}
		if ok && PermitResource(sem, permit) != tt.in {
			t.Errorf("PermitResource(%q, %d) != %q", sem, permit, tt.in)
		}
	}
}
