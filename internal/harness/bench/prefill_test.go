package bench

import (
	"context"
	"testing"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/schema"
)

// TestPrefillTopsUp: pre-filling makes exactly the rows asked for, keeps
// them for the next run, which tops up to its own number, and leaves the
// tables alone when asked for none.
func TestPrefillTopsUp(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	if err := schema.Up(dbURL, schema.Gateway()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, step := range []struct{ fences, keys, wantFences, wantKeys int64 }{
		{1000, 300, 1000, 300},
		{2500, 0, 2500, 300}, // tops up fences, keys as they were
		{0, 0, 2500, 300},
		{10, 10, 2500, 300}, // never deletes
	} {
		s, err := prefill(ctx, dbURL, step.fences, step.keys)
		if err != nil {
			t.Fatal(err)
		}
		if s.FenceRows != step.wantFences || s.IdempotencyRows != step.wantKeys || s.FenceBytes <= 0 || s.IdempotencyBytes <= 0 {
			t.Errorf("prefill(%d, %d) = %+v, want %d fence rows and %d keys, bytes > 0", step.fences, step.keys, s, step.wantFences, step.wantKeys)
		}
	}
}
