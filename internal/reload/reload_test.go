package reload

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clock is a test clock that moves only when told.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) Advance(d time.Duration) { c.now = c.now.Add(d) }

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path+".new", []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// upper parses a file that must hold upper-case text.
func upper(contents [][]byte) (string, error) {
	s := strings.TrimSpace(string(contents[0]))
	if s != strings.ToUpper(s) {
		return "", errors.New("not upper case")
	}
	return s, nil
}

func TestFilesReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v")
	write(t, path, "ONE")
	clk := &clock{now: time.Unix(1000, 0)}
	var reported []string
	f, err := Load([]string{path}, upper, Options{Interval: time.Second, Now: clk.Now, OnError: func(err error) { reported = append(reported, err.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		write   string // "" leaves the file; "-" removes it
		advance time.Duration
		want    string
		reports int
	}{
		{"changed within the interval: not read yet", "TWO", 500 * time.Millisecond, "ONE", 0},
		{"the interval passed: read", "", 500 * time.Millisecond, "TWO", 0},
		{"a change that does not parse keeps the value", "three", time.Second, "TWO", 1},
		{"reported once while it stays", "", time.Second, "TWO", 1},
		{"removed: kept, reported", "-", time.Second, "TWO", 2},
		{"empty: kept, reported", "  \n", time.Second, "TWO", 3},
		{"fixed: loaded", "FOUR", time.Second, "FOUR", 3},
		{"the same failure again is news", "three", time.Second, "FOUR", 4},
	}
	for _, s := range steps {
		switch s.write {
		case "":
		case "-":
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		default:
			write(t, path, s.write)
		}
		clk.Advance(s.advance)
		if got := f.Current(); got != s.want || len(reported) != s.reports {
			t.Fatalf("%s: Current() = %q with %d reports %q; want %q with %d", s.name, got, len(reported), reported, s.want, s.reports)
		}
	}
	for _, r := range reported {
		if !strings.Contains(r, "still using the files as they were") {
			t.Errorf("report %q does not say the old value stays", r)
		}
	}
}

func TestLoadRefuses(t *testing.T) {
	dir := t.TempDir()
	empty, big, bad := filepath.Join(dir, "empty"), filepath.Join(dir, "big"), filepath.Join(dir, "bad")
	write(t, empty, "")
	write(t, big, strings.Repeat("A", MaxFileSize+1))
	write(t, bad, "lower")
	for _, tt := range []struct {
		name, path string
		want       error
		text       string
	}{
		{"missing", filepath.Join(dir, "none"), os.ErrNotExist, "none"},
		{"empty", empty, ErrEmpty, "empty"},
		{"too large", big, ErrTooLarge, "big"},
		{"does not parse", bad, nil, "not upper case"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]string{tt.path}, upper, Options{})
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("Load = %v, want %v naming %q", err, tt.want, tt.text)
			}
		})
	}
}
