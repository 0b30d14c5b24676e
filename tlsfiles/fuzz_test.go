package tlsfiles

import (
	"errors"
	"testing"

	"github.com/fencegw/fencegw/internal/harness/testcerts"
)

// FuzzParseCAs feeds arbitrary bytes to the CA bundle parser: no panics,
// a refusal is ErrBadFile, and an accepted bundle holds a certificate.
func FuzzParseCAs(f *testing.F) {
	ca := testcerts.NewCA(f, "fuzz")
	f.Add(ca.PEM())
	f.Add(append(append([]byte{}, ca.PEM()...), ca.PEM()...))
	f.Add(append(append([]byte{}, ca.PEM()...), "trailing"...))
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		pool, err := parseCAs("fuzz.pem", data)
		if err != nil {
			if !errors.Is(err, ErrBadFile) || pool != nil {
				t.Fatalf("parseCAs = %v, %v: want nil and ErrBadFile", pool, err)
			}
			return
		}
		if pool == nil || pool.Equal(nil) {
			t.Fatal("accepted a bundle without a certificate")
		}
	})
}
