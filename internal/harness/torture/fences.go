package torture

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/torture/check"
	"github.com/fencegw/fencegw/tokens"
)

// readFences reads, in tx's snapshot, what the checker holds the fences
// to (check.FenceReading): every fence row, the fence floor, and each
// resource's highest applied token. at must be read before the snapshot
// was taken (before tx's first statement): a write acknowledged before it
// had committed before the snapshot.
func readFences(ctx context.Context, tx pgx.Tx, label string, at time.Time) (check.FenceReading, error) {
	r := check.FenceReading{Label: label, At: at, Fences: map[string]tokens.Token{}, Applied: map[string]tokens.Token{}}
	var res string
	var t tokens.Token
	rows, err := tx.Query(ctx, "SELECT resource, epoch, revision FROM fencegw.fences")
	if err != nil {
		return r, fmt.Errorf("torture: read the fences: %w", err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&res, &t.Epoch, &t.Revision}, func() error { r.Fences[res] = t; return nil }); err != nil {
		return r, fmt.Errorf("torture: read the fences: %w", err)
	}
	if err := tx.QueryRow(ctx, "SELECT epoch, revision FROM fencegw.fence_floor").Scan(&r.Floor.Epoch, &r.Floor.Revision); err != nil {
		return r, fmt.Errorf("torture: read the fence floor: %w", err)
	}
	rows, err = tx.Query(ctx, "SELECT DISTINCT ON (resource) resource, epoch, revision FROM torture.log ORDER BY resource, epoch DESC, revision DESC")
	if err != nil {
		return r, fmt.Errorf("torture: read the applied tokens: %w", err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&res, &t.Epoch, &t.Revision}, func() error { r.Applied[res] = t; return nil }); err != nil {
		return r, fmt.Errorf("torture: read the applied tokens: %w", err)
	}
	return r, nil
}

// inSnapshot runs read in one repeatable-read, read-only transaction of the
// server at dbURL, and passes it the time taken before its snapshot.
func inSnapshot(ctx context.Context, dbURL string, read func(tx pgx.Tx, at time.Time) error) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	at := time.Now()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	return read(tx, at)
}

// fencesAfterFailover reads the fences of the promoted primary at
// primaryURL, before the run writes on: a commit the promotion lost shows
// as a fence below a write acknowledged before it, which later writes
// with newer tokens would hide by the end.
func (n *nemesis) fencesAfterFailover(ctx context.Context, primaryURL string) {
	label := fmt.Sprintf("after failover %d", n.counts()["failover"]+1)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := inSnapshot(ctx, primaryURL, func(tx pgx.Tx, at time.Time) error {
		r, err := readFences(ctx, tx, label, at)
		if err == nil {
			n.mu.Lock()
			n.fences = append(n.fences, r)
			n.mu.Unlock()
		}
		return err
	})
	if err != nil {
		n.log.Error("reading the fences after a failover failed", "error", err)
	}
}
