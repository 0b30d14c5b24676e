package schema_test

import (
	"strings"
	"testing"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/schema"
)

// TestFloorDownRefusedOncePruned: undoing version 13 drops the fence
// floor, which an older fence does not check; once the floor was raised
// (rows may have been pruned below it), the down migration refuses and
// the floor stays. At 1:0 (never raised) it goes.
func TestFloorDownRefusedOncePruned(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	m := open(t, dbURL, schema.Gateway())
	if err := m.Up(); err != nil {
		t.Fatal(err)
	}
	// Down to version 13, the floor's, first: the migrations after it do
	// not touch the floor.
	latest, err := schema.Latest(schema.Gateway())
	if err != nil {
		t.Fatal(err)
	}
	if latest > 13 {
		if err := m.Down(int(latest) - 13); err != nil {
			t.Fatal(err)
		}
	}
	conn := connect(t, dbURL)
	if _, err := conn.Exec(t.Context(), "UPDATE fencegw.fence_floor SET epoch = 1, revision = 42"); err != nil {
		t.Fatal(err)
	}
	if err := m.Down(1); err == nil || !strings.Contains(err.Error(), "fence floor is at 1:42") {
		t.Fatalf("down past the floor at 1:42 = %v, want a refusal naming it", err)
	}
	var floor string
	if err := conn.QueryRow(t.Context(), "SELECT epoch || ':' || revision FROM fencegw.fence_floor").Scan(&floor); err != nil || floor != "1:42" {
		t.Fatalf("after the refusal the floor is %q, %v; want it kept at 1:42", floor, err)
	}
	// What the hint says: the operator sets it back, forces, and goes down.
	if _, err := conn.Exec(t.Context(), "UPDATE fencegw.fence_floor SET epoch = 1, revision = 0"); err != nil {
		t.Fatal(err)
	}
	if err := m.Force(13); err != nil {
		t.Fatal(err)
	}
	if err := m.Down(1); err != nil {
		t.Fatalf("down with the floor at 1:0: %v", err)
	}
	var exists bool
	if err := conn.QueryRow(t.Context(), "SELECT to_regclass('fencegw.fence_floor') IS NOT NULL").Scan(&exists); err != nil || exists {
		t.Fatalf("fence_floor after down: exists %t, %v", exists, err)
	}
}
