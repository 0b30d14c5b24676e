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
	rows, err := db.Query(ctx, `SELECT resource, epoch, token, writes, updated_at FROM fencegw.fences
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
