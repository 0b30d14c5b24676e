package pgcluster

import (
	"io"
	"os"
	"strings"
	"sync"
)

// tailSize bounds how much server output an error message quotes.
const tailSize = 2048

// tailBuffer keeps the last tailSize bytes written to it, so start errors can
// quote server output even when the caller's Log writer cannot be re-read.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - tailSize; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// fileTail returns up to the last tailSize bytes of the file at path, or ""
// if it cannot be read; it only decorates error messages.
func fileTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(fi.Size()-tailSize, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return ""
	}
	s := string(b)
	if off > 0 {
		// Drop the partial first line so the quote starts cleanly.
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return s
}
