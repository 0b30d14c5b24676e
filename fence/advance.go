package fence

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/tokens"
)

// ErrNoFence means a resource has no fence row: nothing was ever written
// under it, so no token of it can be cut off.
var ErrNoFence = errors.New("fence: the resource has no fence")

// AdvanceFence moves resource's fence up to to, so that every token below
// it is refused from the next write on, and returns the fence it had. A
// fence at or past to is left as it is (advanced false): a fence never
// goes back. With dryRun nothing changes, and advanced says whether it
// would. It takes the fence row's lock, as a write does, so a write in
// flight commits before it or is judged against the new fence. ctx
// bounds it.
func (s *Store) AdvanceFence(ctx context.Context, resource string, to tokens.Token, dryRun bool) (before tokens.Token, advanced bool, err error) {
	conn, err := s.acquire(ctx)
	if err != nil {
		return tokens.Token{}, false, fmt.Errorf("fence: advance %s: %w", resource, err)
	}
	defer conn.Release()
	pc := conn.Conn().PgConn()
	heardBefore := heard(pc)
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, "SELECT epoch, revision FROM fencegw.fences WHERE resource = $1 FOR UPDATE", resource).
			Scan(&before.Epoch, &before.Revision)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", ErrNoFence, resource)
		}
		if err != nil {
			return err
		}
		advanced = before.Compare(to) < 0
		if !advanced || dryRun {
			return nil
		}
		_, err = tx.Exec(ctx, "UPDATE fencegw.fences SET epoch = $2, revision = $3, updated_at = now() WHERE resource = $1",
			resource, to.Epoch, to.Revision)
		return err
	})
	if err == nil {
		// The advance cuts a holder off only if it lasts.
		err = s.warnedSince(pc, heardBefore)
	}
	if commitWarned(err) {
		return tokens.Token{}, false, fmt.Errorf("fence: advance %s: %w", resource, err)
	}
	if err != nil && !errors.Is(err, ErrNoFence) {
		return tokens.Token{}, false, fmt.Errorf("fence: advance %s: %w: %w", resource, ErrUnavailable, err)
	}
	return before, advanced, err
}
