package tokens

import "testing"

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("1:9223372036854775"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkString(b *testing.B) {
	b.ReportAllocs()
	tok := Token{Epoch: 1, Revision: 9223372036854775}
	for b.Loop() {
		_ = tok.String()
	}
}

func BenchmarkVerify(b *testing.B) {
	ring, _ := NewKeyring(Key{Secret: []byte("0123456789abcdef0123456789abcdef")})
	tok := ring.Sign(Token{Epoch: 1, Revision: 9223372036854775}, "account/acct-42", "billing")
	b.ReportAllocs()
	for b.Loop() {
		if !ring.Verify(tok, "account/acct-42", "billing") {
			b.Fatal("refused")
		}
	}
}
