package schema_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/schema"
)

// TestRedefinitionUnderWrites: fence and guard_row are defined again (each
// time after an edit by hand) while fenced writes run on a guarded table,
// as when one replica migrates while the others write: no write fails,
// and every one is applied once.
func TestRedefinitionUnderWrites(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	if err := schema.Up(dbURL, schema.Gateway(), demoApp); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, dbURL)
	installGuard(t, conn)
	w := newWriter(t, dbURL)
	var applied atomic.Int64
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		for rev := int64(1); ; rev++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err := w.apply(nil, "credit", `{"account": "acct-9", "amount_cents": 1}`, rev); err != nil {
				done <- err
				return
			}
			applied.Add(1)
		}
	}()
	for i := range 10 {
		// Writes between each redefinition and the next.
		before := applied.Load()
		if !testenv.WaitFor(30*time.Second, func() bool { return applied.Load() > before }) {
			close(stop)
			t.Fatalf("redefinition %d: no write applied since the last one (%v)", i, <-done)
		}
		if _, err := conn.Exec(t.Context(), `ALTER FUNCTION fencegw.fence(text, bigint, bigint, boolean, boolean) SET work_mem = '8MB';
			ALTER FUNCTION fencegw.guard_row() SET work_mem = '8MB'`); err != nil {
			t.Fatal(err)
		}
		if out, err := up(t, dbURL, schema.Gateway()); err != nil || out != "defined fencegw.fence\ndefined fencegw.guard_row\n" {
			t.Fatalf("redefinition %d: Up reported %q, %v; want fence and guard_row defined", i, out, err)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("a write while the functions were defined again: %v", err)
	}
	var balance int64
	if err := conn.QueryRow(t.Context(), "SELECT balance_cents FROM demo.accounts WHERE id = 'acct-9'").Scan(&balance); err != nil {
		t.Fatal(err)
	}
	if want := 1000 + applied.Load(); balance != want {
		t.Fatalf("acct-9's balance %d, want %d: 1000 and each of %d credits once", balance, want, applied.Load())
	}
}
