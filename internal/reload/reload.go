// Package reload keeps a value made from files (a certificate and its key,
// a CA bundle, a JWKS) current as the files are replaced: certificates
// rotate, keys roll, and a restart to read them is an outage. The files are
// read again at most once an interval, when the value is asked for; a
// change that does not parse keeps the value in force and is reported once.
package reload

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// MaxFileSize bounds each file read: certificates, keys and key sets are
// kilobytes; a larger file is a mistake, not something to hold in memory.
const MaxFileSize = 1 << 20

// DefaultInterval is how often the files are read again at most.
const DefaultInterval = time.Second

var (
	// ErrEmpty refuses an empty file: a rotation caught half-way by a
	// writer that truncates in place, or a mount not yet filled.
	ErrEmpty = errors.New("reload: file is empty")
	// ErrTooLarge refuses a file past MaxFileSize.
	ErrTooLarge = errors.New("reload: file larger than 1 MiB")
)

// Options tune a Files.
type Options struct {
	// Interval is the least time between two reads of the files; 0:
	// DefaultInterval.
	Interval time.Duration
	// OnError is told of a change that did not load, once per distinct
	// state of the files; the value in force stays.
	OnError func(error)
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// Files is a value of type T parsed from the contents of files, in order.
// It is safe for concurrent use.
type Files[T any] struct {
	paths   []string
	parse   func([][]byte) (T, error)
	opts    Options
	cur     atomic.Pointer[T]
	checked atomic.Int64 // UnixNano of the last read
	// mu is held by the one caller that reads the files; the others use
	// the value in force meanwhile.
	mu     sync.Mutex
	loaded [32]byte // digest of the contents cur came from
	failed [32]byte // digest of the last state reported to OnError
}

// Load reads the files and parses them: an error here is one to refuse to
// start with.
func Load[T any](paths []string, parse func(contents [][]byte) (T, error), opts Options) (*Files[T], error) {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	f := &Files[T]{paths: paths, parse: parse, opts: opts}
	contents, sum, err := f.read()
	if err != nil {
		return nil, err
	}
	v, err := parse(contents)
	if err != nil {
		return nil, err
	}
	f.cur.Store(&v)
	f.loaded = sum
	f.checked.Store(opts.Now().UnixNano())
	return f, nil
}

// Current returns the value, after reading the files again if the interval
// has passed since they were last read and no other caller is reading
// them now.
func (f *Files[T]) Current() T {
	if f.opts.Now().Sub(time.Unix(0, f.checked.Load())) >= f.opts.Interval && f.mu.TryLock() {
		f.check()
		f.mu.Unlock()
	}
	return *f.cur.Load()
}

// check reads the files and, if they changed, parses them; f.mu is held.
func (f *Files[T]) check() {
	f.checked.Store(f.opts.Now().UnixNano())
	contents, sum, err := f.read()
	if err == nil && sum == f.loaded {
		f.failed = [32]byte{} // back as loaded: a failure again is news
		return
	}
	if err == nil {
		var v T
		if v, err = f.parse(contents); err == nil {
			f.cur.Store(&v)
			f.loaded, f.failed = sum, [32]byte{}
			return
		}
	}
	if err != nil && sum != f.failed {
		f.failed = sum
		if f.opts.OnError != nil {
			f.opts.OnError(fmt.Errorf("%w; still using the files as they were", err))
		}
	}
}

// read returns the files' contents and their digest; a file that cannot
// be read gives the digest of its error, so that each distinct failure is
// reported once.
func (f *Files[T]) read() ([][]byte, [32]byte, error) {
	h := sha256.New()
	contents := make([][]byte, len(f.paths))
	for i, path := range f.paths {
		data, err := readFile(path)
		if err != nil {
			h.Write([]byte(err.Error()))
			return nil, [32]byte(h.Sum(nil)), err
		}
		fmt.Fprintf(h, "%d:", len(data))
		h.Write(data)
		contents[i] = data
	}
	return contents, [32]byte(h.Sum(nil)), nil
}

func readFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", path, err)
	case len(data) > MaxFileSize:
		return nil, fmt.Errorf("%s: %w", path, ErrTooLarge)
	case len(bytes.TrimSpace(data)) == 0:
		return nil, fmt.Errorf("%s: %w", path, ErrEmpty)
	}
	return data, nil
}
