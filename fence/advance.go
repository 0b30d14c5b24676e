package fence

import (
	"context"
	"fmt"

	"github.com/fencegw/fencegw/tokens"
)

// AdvanceFence moves resource's fence up to to, so that every token below
// it is refused from the next write on, and returns the fence it had (the
// fence floor, for a resource without a fence row). A fence at or past to
// is left as it is (advanced false): a fence never goes back. A resource
// without a row gets one, so that a token no write has spent yet is cut
// off too. With dryRun nothing changes, and advanced says whether it
// would. It takes the fence row's lock, as a write does, so a write in
// flight commits before it or is judged against the new fence
// (sql/advance_fence.sql: the gateway's role may not UPDATE a fence row
// itself). ctx bounds it.
func (s *Store) AdvanceFence(ctx context.Context, resource string, to tokens.Token, dryRun bool) (before tokens.Token, advanced bool, err error) {
	conn, err := s.acquire(ctx)
	if err != nil {
		return tokens.Token{}, false, fmt.Errorf("fence: advance %s: %w", resource, err)
	}
	defer conn.Release()
	pc := conn.Conn().PgConn()
	heardBefore := heard(pc)
	err = conn.QueryRow(ctx, "SELECT before_epoch, before_revision, advanced FROM fencegw.advance_fence($1, $2, $3, $4)",
		resource, to.Epoch, to.Revision, dryRun).Scan(&before.Epoch, &before.Revision, &advanced)
	if err == nil {
		// The advance cuts a holder off only if it lasts.
		err = s.warnedSince(pc, heardBefore)
	}
	if commitWarned(err) {
		return tokens.Token{}, false, fmt.Errorf("fence: advance %s: %w", resource, err)
	}
	if err != nil {
		return tokens.Token{}, false, fmt.Errorf("fence: advance %s: %w: %w", resource, ErrUnavailable, err)
	}
	return before, advanced, nil
}
