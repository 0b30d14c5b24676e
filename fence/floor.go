package fence

import (
	"context"
	"fmt"

	"github.com/fencegw/fencegw/tokens"
)

// The fence floor is the fence of every resource without a fence row
// (fencegw.fence_floor): fencegw.fence refuses a token at or below it when
// it makes a row. A row at or below the floor refuses only tokens the
// floor refuses too, so PruneFences may delete it and nothing it refused
// can write again; the table then holds the resources written above the
// floor, not every resource ever written.
//
// The floor is safe to raise to any token no write can still need: one
// below every token a live lease holds or may yet be granted (tokens are
// valid only while their lease lives, and etcd issues higher revisions
// from then on). A token of an ended epoch is below any floor of a later
// one, so raising the floor into a new epoch prunes every row of the old.
// The authority computes such a token (authority.Etcd.TokenFloor);
// RaiseFloor records it, never lowering the floor.

// PruneBatch is how many fence rows one pruning transaction looks at.
const PruneBatch = 5000

// Floor returns the fence floor.
func Floor(ctx context.Context, db DB) (tokens.Token, error) {
	var f tokens.Token
	if err := db.QueryRow(ctx, "SELECT epoch, revision FROM fencegw.fence_floor").Scan(&f.Epoch, &f.Revision); err != nil {
		return f, fmt.Errorf("fence: reading the fence floor: %w", err)
	}
	return f, nil
}

// RaiseFloor raises the fence floor to floor, read from the etcd whose
// identity is identity, and returns the floor after. The floor stays where
// it is unless the authority record's newest epoch is floor's and its
// identity is identity; it never goes down, nor above the highest revision
// recorded for the epoch (sql/raise_fence_floor.sql).
func (s *Store) RaiseFloor(ctx context.Context, floor tokens.Token, identity string) (tokens.Token, error) {
	var f tokens.Token
	err := s.pool.QueryRow(ctx, "SELECT epoch, revision FROM fencegw.raise_fence_floor($1, $2, $3)",
		floor.Epoch, floor.Revision, identity).Scan(&f.Epoch, &f.Revision)
	if err != nil {
		return f, fmt.Errorf("fence: raising the fence floor: %w", err)
	}
	return f, nil
}

// PruneFences deletes every fence row at or below the fence floor, in
// transactions of PruneBatch rows, and returns how many went. ctx bounds
// it; a sweep cut short has deleted what it returns.
func (s *Store) PruneFences(ctx context.Context) (int64, error) {
	var total int64
	after := ""
	for {
		var last *string
		var n int64
		if err := s.pool.QueryRow(ctx, "SELECT last, pruned FROM fencegw.prune_fences($1, $2)", after, PruneBatch).Scan(&last, &n); err != nil {
			return total, fmt.Errorf("fence: pruning fences: %w", err)
		}
		total += n
		if last == nil {
			return total, nil
		}
		after = *last
	}
}
