package fence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The lock history (fencegw.lock_history) keeps, per resource, its newest
// MaxHistory events, none older than HistoryKeptFor: enough to answer
// who held a lock during an incident weeks later, bounded however busy a
// resource is. fencegw.trim_history holds these numbers
// (sql/trim_history.sql): the gateway's role, which may only insert into
// the history, must not choose how much of it is deleted.
const (
	MaxHistory     = 1000
	HistoryKeptFor = 30 * 24 * time.Hour
)

// Events of the lock history.
const (
	Granted       = "granted"
	Released      = "released"
	Expired       = "expired"
	Revoked       = "revoked"
	LockDelayed   = "lock-delay"     // the lock is held back after an expiry
	FenceAdvanced = "fence-advanced" // an operator cut off every token issued so far
)

// HistoryEvent is one row of the lock history. Token is E:R, never a
// signed token: the history is evidence, not a credential.
type HistoryEvent struct {
	At       time.Time `json:"at"`
	Resource string    `json:"resource"`
	Event    string    `json:"event"`
	LeaseID  string    `json:"lease_id,omitempty"`
	Client   string    `json:"client,omitempty"` // the lease's owner
	Token    string    `json:"token,omitempty"`
	Actor    string    `json:"actor,omitempty"` // who revoked or advanced
	Reason   string    `json:"reason,omitempty"`
}

// HistoryCursor is how far the lock history's watch of etcd got: every
// lease end at or before Revision of the etcd cluster Identity has been
// recorded (fencegw.history_cursor).
type HistoryCursor struct {
	Identity string
	Revision int64 // 0: none
}

// RecordHistory adds es to the lock history, and moves the history's
// cursor up to cursor (unless its Revision is 0), in one statement: the
// cursor never passes an end that is not recorded. An event a lease
// already has, or a second end of one lease, is left out: every replica
// records the expiries it sees, and the first one stands. A zero At is the
// database's now. ctx bounds it.
func (s *Store) RecordHistory(ctx context.Context, es []HistoryEvent, cursor HistoryCursor) error {
	if len(es) == 0 && cursor.Revision == 0 {
		return nil
	}
	cols := make([][]*string, 7)
	at := make([]*time.Time, len(es))
	for i, e := range es {
		for c, v := range []string{e.Resource, e.Event, e.LeaseID, e.Client, e.Token, e.Actor, e.Reason} {
			cols[c] = append(cols[c], nullIfEmpty(v))
		}
		if !e.At.IsZero() {
			at[i] = &es[i].At
		}
	}
	// ON CONFLICT without a target: either unique index (one row per
	// lease and event, one end per lease) makes a repeat a no-op.
	const events = `INSERT INTO fencegw.lock_history (at, resource, event, lease_id, client, token, actor, reason)
		SELECT coalesce(a, now()), r, e, l, c, t, ac, re
		  FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[]) AS u(a, r, e, l, c, t, ac, re)
		ON CONFLICT DO NOTHING`
	var err error
	if cursor.Revision == 0 {
		// Without the cursor's table in the statement: a role granted
		// before it existed still records the history.
		_, err = s.pool.Exec(ctx, events, at, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6])
	} else {
		// The cursor goes only forward for one cluster; another cluster's
		// (a rebuilt etcd) replaces it.
		_, err = s.pool.Exec(ctx, `WITH events AS (`+events+`)
		INSERT INTO fencegw.history_cursor AS c (identity, revision) VALUES ($9::text, $10::bigint)
		ON CONFLICT (singleton) DO UPDATE SET identity = excluded.identity,
		    revision = CASE WHEN c.identity = excluded.identity THEN greatest(c.revision, excluded.revision) ELSE excluded.revision END`,
			at, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cursor.Identity, cursor.Revision)
	}
	if err != nil {
		return fmt.Errorf("fence: record history: %w", err)
	}
	return nil
}

// ReadHistoryCursor returns the lock history's cursor; a zero one when no
// end was ever recorded with one.
func ReadHistoryCursor(ctx context.Context, db DB) (HistoryCursor, error) {
	var c HistoryCursor
	err := db.QueryRow(ctx, "SELECT identity, revision FROM fencegw.history_cursor").Scan(&c.Identity, &c.Revision)
	if errors.Is(err, pgx.ErrNoRows) {
		return HistoryCursor{}, nil
	}
	if err != nil {
		return HistoryCursor{}, fmt.Errorf("fence: read the history cursor: %w", err)
	}
	return c, nil
}

// DropHistoryCursor deletes the lock history's cursor if it is still c:
// a cursor past its etcd's revision (etcd restored from a snapshot went
// back) says nothing of the revisions etcd issues again, and kept, it
// would have a replica resume past them.
func DropHistoryCursor(ctx context.Context, db DB, c HistoryCursor) error {
	if _, err := db.Exec(ctx, "DELETE FROM fencegw.history_cursor WHERE identity = $1 AND revision = $2", c.Identity, c.Revision); err != nil {
		return fmt.Errorf("fence: drop the history cursor: %w", err)
	}
	return nil
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// History returns resource's events since since (all kept, if zero),
// oldest first, at most limit of them (the newest). The times are the
// recording replicas' clocks: replicas whose clocks disagree may show
// a lease's end a little before its grant.
func History(ctx context.Context, db DB, resource string, since time.Time, limit int) ([]HistoryEvent, error) {
	var from *time.Time
	if !since.IsZero() {
		from = &since
	}
	rows, err := db.Query(ctx, `SELECT at, resource, event, coalesce(lease_id, ''), coalesce(client, ''), coalesce(token, ''), coalesce(actor, ''), coalesce(reason, '')
		  FROM (SELECT * FROM fencegw.lock_history
		         WHERE resource = $1 AND ($2::timestamptz IS NULL OR at >= $2)
		         ORDER BY at DESC, id DESC LIMIT $3) newest
		 ORDER BY at, id`, resource, from, limit)
	if err != nil {
		return nil, fmt.Errorf("fence: read history: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (HistoryEvent, error) {
		var e HistoryEvent
		err := row.Scan(&e.At, &e.Resource, &e.Event, &e.LeaseID, &e.Client, &e.Token, &e.Actor, &e.Reason)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("fence: read history: %w", err)
	}
	return out, nil
}

// RecentHistory returns the newest events of the lock history of every
// resource, newest first, at most limit: the status page's recent holders.
func RecentHistory(ctx context.Context, db DB, limit int) ([]HistoryEvent, error) {
	rows, err := db.Query(ctx, `SELECT at, resource, event, coalesce(lease_id, ''), coalesce(client, ''), coalesce(token, ''), coalesce(actor, ''), coalesce(reason, '')
		  FROM fencegw.lock_history ORDER BY id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("fence: read recent history: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (HistoryEvent, error) {
		var e HistoryEvent
		err := row.Scan(&e.At, &e.Resource, &e.Event, &e.LeaseID, &e.Client, &e.Token, &e.Actor, &e.Reason)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("fence: read recent history: %w", err)
	}
	return out, nil
}
