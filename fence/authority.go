package fence

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/tokens"
)

// Records is PostgreSQL's memory of the token authority (fencegw.authority):
// which epoch is current, the etcd cluster that issues it, its identity and
// the highest revision seen in it. It is the authority package's RecordStore.
type Records struct{ DB DB }

// Load returns the record of the current epoch.
func (r Records) Load(ctx context.Context) (tokens.Record, error) {
	var rec tokens.Record
	err := r.DB.QueryRow(ctx, "SELECT epoch, coalesce(cluster_id, ''), coalesce(identity, ''), max_revision FROM fencegw.authority ORDER BY epoch DESC LIMIT 1").
		Scan(&rec.Epoch, &rec.ClusterID, &rec.Identity, &rec.MaxRevision)
	if err != nil {
		return rec, fmt.Errorf("%w: reading fencegw.authority: %w", ErrUnavailable, err)
	}
	return rec, nil
}

// Save records, for rec's epoch, the cluster that issues it and a newer
// revision seen in it (the recorded revision never goes down).
func (r Records) Save(ctx context.Context, rec tokens.Record) error {
	_, err := r.DB.Exec(ctx,
		"UPDATE fencegw.authority SET cluster_id = $2, identity = $3, max_revision = greatest(max_revision, $4), updated_at = now() WHERE epoch = $1",
		rec.Epoch, rec.ClusterID, rec.Identity, rec.MaxRevision)
	if err != nil {
		return fmt.Errorf("%w: recording the etcd revision: %w", ErrUnavailable, err)
	}
	return nil
}

// Start records a new epoch; it fails if the epoch exists.
func (r Records) Start(ctx context.Context, rec tokens.Record) error {
	_, err := r.DB.Exec(ctx, "INSERT INTO fencegw.authority (epoch, cluster_id, identity, max_revision) VALUES ($1, $2, $3, $4)",
		rec.Epoch, rec.ClusterID, rec.Identity, rec.MaxRevision)
	if err != nil {
		return fmt.Errorf("fence: recording epoch %d: %w", rec.Epoch, err)
	}
	return nil
}

// History returns the record of every epoch, oldest first.
func (r Records) History(ctx context.Context) ([]tokens.Record, error) {
	rows, err := r.DB.Query(ctx, "SELECT epoch, coalesce(cluster_id, ''), coalesce(identity, ''), max_revision FROM fencegw.authority ORDER BY epoch")
	if err != nil {
		return nil, fmt.Errorf("%w: reading fencegw.authority: %w", ErrUnavailable, err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (tokens.Record, error) {
		var rec tokens.Record
		err := row.Scan(&rec.Epoch, &rec.ClusterID, &rec.Identity, &rec.MaxRevision)
		return rec, err
	})
}
