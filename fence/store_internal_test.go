package fence

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestRequestRefusesASessionInsideATransaction: an implicit transaction
// ends at its Sync, but inside an open transaction that Sync commits
// nothing, so a success there would be a lie. Both transaction shapes
// refuse such a session before sending anything: unavailable, not applied.
func TestRequestRefusesASessionInsideATransaction(t *testing.T) {
	pool, err := NewPool(context.Background(), testenv.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release() // inside a transaction: the pool closes it
	if _, err := conn.Exec(t.Context(), "BEGIN"); err != nil {
		t.Fatal(err)
	}
	s := &Store{pool: pool}
	_, errImplicit := s.applyImplicit(t.Context(), conn, &Request{})
	p := &pending{req: &Request{IdempotencyKey: &IdempotencyKey{}}}
	s.runTx(t.Context(), conn, []*pending{p})
	for name, err := range map[string]error{"implicit": errImplicit, "explicit": p.err} {
		if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
			t.Errorf("%s transaction on a session inside a transaction: %v, want unavailable and not applied", name, err)
		}
	}
	if status := conn.Conn().PgConn().TxStatus(); status != 'T' {
		t.Errorf("transaction status %q: the refused requests sent something", status)
	}
}

// TestGroupLockTimeout: a group waits for a row lock a quarter of its
// deadline, or the sessions' lock_timeout if an operator set a shorter
// one in the URL.
func TestGroupLockTimeout(t *testing.T) {
	for url, want := range map[string]string{
		"postgres://u@127.0.0.1:1/db":                    "2500",
		"postgres://u@127.0.0.1:1/db?lock_timeout=250":   "250",
		"postgres://u@127.0.0.1:1/db?lock_timeout=1s":    "1000",
		"postgres://u@127.0.0.1:1/db?lock_timeout=60000": "2500",
		"postgres://u@127.0.0.1:1/db?lock_timeout=0":     "2500",
	} {
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		ConfigurePool(cfg)
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{Pool: pool, WriteTimeout: 10 * time.Second})
		pool.Close()
		if err != nil || s.groupLockTimeout != want {
			t.Errorf("%s: group lock_timeout %q (%v), want %q", url, s.groupLockTimeout, err, want)
		}
	}
}

func TestParseLockTimeout(t *testing.T) {
	for v, want := range map[string]time.Duration{"250": 250 * time.Millisecond, "0": 0, "3s": 3 * time.Second, "2min": 2 * time.Minute, " 5 ms ": 5 * time.Millisecond, "1d": 24 * time.Hour} {
		if d, ok := parseLockTimeout(v); !ok || d != want {
			t.Errorf("parseLockTimeout(%q) = %v, %v; want %v", v, d, ok, want)
		}
	}
	for _, v := range []string{"", "-1", "1.5s", "1w", "s", "99999999999999999999", "9999999999999d"} {
		if d, ok := parseLockTimeout(v); ok {
			t.Errorf("parseLockTimeout(%q) = %v, want refused", v, d)
		}
	}
}

// FuzzParseLockTimeout: never panics, never negative; bare digits are
// milliseconds.
func FuzzParseLockTimeout(f *testing.F) {
	for _, s := range []string{"250", "1s", "2min", "0", "-1", "1.5s", " 7 h", "99999999999999d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := parseLockTimeout(v)
		if !ok {
			return
		}
		if d < 0 {
			t.Fatalf("%q: %v", v, d)
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && d != time.Duration(n)*time.Millisecond {
			t.Fatalf("%q: %v, want %d ms", v, d, n)
		}
	})
}
