package fence

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Replica is one gateway's entry in fencegw.replicas: which policy it runs.
type Replica struct {
	Name   string // unique per process
	Policy string // the policy file's digest
	Fences string // the policy's fence settings
}

// Announce records that r is alive now and returns the other replicas seen
// within recent whose policy or fence settings differ from r's (at most
// ten). Entries not
// refreshed for a day are removed.
func Announce(ctx context.Context, db DB, r Replica, recent time.Duration) ([]Replica, error) {
	rows, err := db.Query(ctx, `
		WITH me AS (
			INSERT INTO fencegw.replicas (name, policy, fences) VALUES ($1, $2, $3)
			ON CONFLICT (name) DO UPDATE SET policy = EXCLUDED.policy, fences = EXCLUDED.fences, seen_at = now()
		), gone AS (
			DELETE FROM fencegw.replicas WHERE seen_at < now() - interval '1 day'
		)
		SELECT name, policy, fences FROM fencegw.replicas
		 WHERE name <> $1 AND (policy <> $2 OR fences <> $3) AND seen_at > now() - make_interval(secs => $4)
		 ORDER BY name LIMIT 10`,
		r.Name, r.Policy, r.Fences, recent.Seconds())
	if err != nil {
		return nil, fmt.Errorf("%w: announcing this replica: %w", ErrUnavailable, err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Replica])
}

// Withdraw removes r's entry: a replica shutting down stops counting at
// once rather than when its entry grows old.
func Withdraw(ctx context.Context, db DB, name string) error {
	if _, err := db.Exec(ctx, "DELETE FROM fencegw.replicas WHERE name = $1", name); err != nil {
		return fmt.Errorf("%w: withdrawing this replica: %w", ErrUnavailable, err)
	}
	return nil
}
