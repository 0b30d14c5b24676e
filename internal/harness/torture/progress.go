package torture

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// progressEvery is how often a run says how far it got.
const progressEvery = 5 * time.Second

// reportProgress logs, every progressEvery until ctx ends, the writes
// applied so far (read from PostgreSQL, which the nemesis may have down)
// and the faults injected. Violations are known only once the checker has
// every history, at the end.
func reportProgress(ctx context.Context, log *slog.Logger, dbURL string, n *nemesis, start time.Time) {
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		faults := 0
		n.mu.Lock()
		for _, c := range n.faults {
			faults += c
		}
		n.mu.Unlock()
		attrs := []any{"elapsed", time.Since(start).Round(time.Second).String(), "faults", faults}
		if applied, err := appliedWrites(ctx, dbURL); err == nil {
			attrs = append(attrs, "writes_applied", applied)
		} else {
			attrs = append(attrs, "writes_applied", "unknown (PostgreSQL unreachable)")
		}
		log.Info("torture: progress", attrs...)
	}
}

func appliedWrites(ctx context.Context, dbURL string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int64
	err = conn.QueryRow(ctx, "SELECT count(*) FROM torture.log").Scan(&n)
	return n, err
}
