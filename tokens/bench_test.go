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
