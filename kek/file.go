package kek

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
)

// ErrNoKEK means a file that holds no KEK: only blank or comment lines.
var ErrNoKEK = errors.New("kek: the file holds no KEK (one a line: base64 of 32 random bytes, as `fencegw kek new` writes)")

// Parse reads a KEK file (doc.go). Its errors name the line at fault and
// never quote it.
func Parse(data []byte) (*Ring, error) {
	var keks [][]byte
	seen := map[string]int{}
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		n := i + 1
		kek := make([]byte, base64.StdEncoding.DecodedLen(len(line)))
		size, err := base64.StdEncoding.Decode(kek, line)
		switch {
		case err != nil:
			return nil, fmt.Errorf("kek: line %d is not standard base64 (a KEK a line: base64 of 32 random bytes)", n)
		case size != Size:
			return nil, fmt.Errorf("kek: line %d holds %d bytes: a KEK is %d (base64 of 32 random bytes)", n, size, Size)
		}
		kek = kek[:size]
		if first, ok := seen[string(kek)]; ok {
			return nil, fmt.Errorf("kek: line %d repeats line %d", n, first)
		}
		seen[string(kek)] = n
		keks = append(keks, kek)
	}
	if len(keks) == 0 {
		return nil, ErrNoKEK
	}
	return newRing(keks)
}

// New returns the contents of a KEK file holding one new KEK.
func New() []byte {
	kek := make([]byte, Size)
	_, _ = rand.Read(kek) // never fails, per crypto/rand's docs
	return fmt.Appendf(nil, "# fencegw token KEK %s: keep it secret, give it to the gateways and the keys command only\n%s\n",
		ID(kek), base64.StdEncoding.EncodeToString(kek))
}
