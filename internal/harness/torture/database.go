package torture

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// database is the run's PostgreSQL: one server the nemesis restarts in
// place, or a replicated pair it fails over (--failover).
type database struct {
	pg         *postgres
	replicated *replicated
}

func startDatabase(ctx context.Context, cfg Config, dir string) (*database, error) {
	if cfg.Failover {
		r, err := startReplicated(ctx, !cfg.AsyncStandby)
		if err != nil {
			return nil, err
		}
		return &database{replicated: r}, nil
	}
	pg, err := startPostgres(ctx, dir)
	if err != nil {
		return nil, err
	}
	return &database{pg: pg}, nil
}

// prepared is called once the schema is in place: a replicated database
// gets its standby.
func (d *database) prepared(ctx context.Context) error {
	if d.replicated != nil {
		return d.replicated.startStandby(ctx)
	}
	return nil
}

// url is what gateways and workers connect with.
func (d *database) url() string {
	if d.replicated != nil {
		return d.replicated.url()
	}
	return d.pg.url()
}

// checkURL is the server the checker reads at the end: after failovers,
// the promoted one.
func (d *database) checkURL() string {
	if d.replicated != nil {
		return d.replicated.primaryURL()
	}
	return d.pg.url()
}

func (d *database) stop() {
	if d.replicated != nil {
		d.replicated.stop()
		return
	}
	_ = d.pg.pg.Stop()
}

// waitForCommit returns once the server at dbURL has committed a write to
// torture.log more than when it was called, or after limit.
func waitForCommit(ctx context.Context, dbURL string, limit time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	var first, n int64
	if conn.QueryRow(ctx, "SELECT coalesce(max(id), 0) FROM torture.log").Scan(&first) != nil {
		return
	}
	for n <= first {
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
		if conn.QueryRow(ctx, "SELECT coalesce(max(id), 0) FROM torture.log").Scan(&n) != nil {
			return
		}
	}
}
