package fence

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/tokens"
)

// FenceRow is one resource's fence as `fencegw inspect` shows it.
type FenceRow struct {
	Resource  string       `json:"resource"`
	Token     tokens.Token `json:"token"`
	Writes    int64        `json:"writes"`
	UpdatedAt time.Time    `json:"updated_at"`
}

// RejectionRow is one refused write of the audit.
type RejectionRow struct {
	At        time.Time `json:"at"`
	Resource  string    `json:"resource"`
	Operation string    `json:"operation"`
	Reason    string    `json:"reason"`
	Presented string    `json:"presented,omitempty"`
	Current   string    `json:"current,omitempty"`
	// Suppressed refusals of the same client and reason stand behind
	// this row (a flood past the audit's rate).
	Suppressed int64 `json:"suppressed,omitempty"`
	// Client ("anonymous" without one), RequestID and RemoteAddr say who
	// was refused; empty in rows recorded before they were.
	Client     string `json:"client,omitempty"`
	RequestID  string `json:"request_id,omitempty"`
	RemoteAddr string `json:"remote_addr,omitempty"`
}

// BypassRow is one declared bypass of the guard triggers.
type BypassRow struct {
	At   time.Time `json:"at"`
	By   string    `json:"by"`
	Why  string    `json:"why"`
	TxID int64     `json:"txid"`
}

// Fences returns at most limit fences of resources starting with prefix,
// most recently advanced first.
func Fences(ctx context.Context, db DB, prefix string, limit int) ([]FenceRow, error) {
	rows, err := db.Query(ctx, `SELECT resource, epoch, revision, writes, updated_at FROM fencegw.fences
		WHERE resource LIKE $1 ORDER BY updated_at DESC, resource LIMIT $2`, likePrefix(prefix), limit)
	if err != nil {
		return nil, fmt.Errorf("fence: fences: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (f FenceRow, err error) {
		err = r.Scan(&f.Resource, &f.Token.Epoch, &f.Token.Revision, &f.Writes, &f.UpdatedAt)
		return f, err
	})
}

// Rejections returns the newest refused writes of resources starting with
// prefix, at most limit.
func Rejections(ctx context.Context, db DB, prefix string, limit int) ([]RejectionRow, error) {
	rows, err := db.Query(ctx, `SELECT at, resource, operation, reason, coalesce(presented, ''), coalesce(current, ''), suppressed,
		coalesce(client, ''), coalesce(request_id, ''), coalesce(remote_addr, '')
		FROM fencegw.rejections WHERE resource LIKE $1 ORDER BY id DESC LIMIT $2`, likePrefix(prefix), limit)
	if err != nil {
		return nil, fmt.Errorf("fence: rejections: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[RejectionRow])
}

// RejectionGroup is the newest refusal of one resource for one reason,
// standing for every such refusal among those scanned: a hot resource
// refused twenty times is one row with a count, not twenty rows that push
// every other resource's refusals out of a short list.
type RejectionGroup struct {
	RejectionRow
	// Count is how many refusals of this resource for this reason the
	// scanned rows hold, each row's suppressed refusals included.
	Count   int64     `json:"count"`
	FirstAt time.Time `json:"first_at"` // the oldest of them scanned
}

// RejectionGroups returns the newest refusals of resources starting with
// prefix grouped by resource and reason, newest group first, at most
// limit groups, from the newest scan refusals: the bound keeps a page
// that polls every second from reading an audit table of any size.
func RejectionGroups(ctx context.Context, db DB, prefix string, limit, scan int) ([]RejectionGroup, error) {
	rows, err := db.Query(ctx, `WITH recent AS (
			SELECT * FROM fencegw.rejections WHERE resource LIKE $1 ORDER BY id DESC LIMIT $3
		), grouped AS (
			SELECT DISTINCT ON (resource, reason) id, at, resource, operation, reason, presented, current, suppressed,
				client, request_id, remote_addr,
				(count(*) OVER w + sum(suppressed) OVER w)::bigint AS n, min(at) OVER w AS first_at
			FROM recent
			WINDOW w AS (PARTITION BY resource, reason)
			ORDER BY resource, reason, id DESC
		)
		SELECT at, resource, operation, reason, coalesce(presented, ''), coalesce(current, ''), suppressed,
			coalesce(client, ''), coalesce(request_id, ''), coalesce(remote_addr, ''), n, first_at
		FROM grouped ORDER BY id DESC LIMIT $2`, likePrefix(prefix), limit, scan)
	if err != nil {
		return nil, fmt.Errorf("fence: rejection groups: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (RejectionGroup, error) {
		var g RejectionGroup
		x := &g.RejectionRow
		err := r.Scan(&x.At, &x.Resource, &x.Operation, &x.Reason, &x.Presented, &x.Current, &x.Suppressed,
			&x.Client, &x.RequestID, &x.RemoteAddr, &g.Count, &g.FirstAt)
		return g, err
	})
}

// Bypasses returns the newest bypasses of the guard triggers, at most limit.
func Bypasses(ctx context.Context, db DB, limit int) ([]BypassRow, error) {
	rows, err := db.Query(ctx, `SELECT at, by_user, why, txid FROM fencegw.bypass_log ORDER BY id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("fence: bypasses: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[BypassRow])
}

// likePrefix is a LIKE pattern matching the strings that start with prefix.
func likePrefix(prefix string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(prefix) + "%"
}
