package fence

import (
	"embed"
	"io/fs"
)

//go:embed sql/*.sql
var definitions embed.FS

// Definitions returns the current SQL of the functions the fenced
// transaction calls, one file each (sql/NAME.sql defines fencegw.NAME):
// fence, stamp_unfenced, expect_rows, not_after, claim_key, settle_key,
// raise_fence_floor, prune_fences, advance_fence, trim_rejections and
// trim_history, and the SQL front's fence_session and refuse
// (frontsession.go), transaction_key and transaction_committed. Package
// schema applies them after the gateway's migrations, and again whenever
// the database holds something else.
func Definitions() fs.FS { sub, _ := fs.Sub(definitions, "sql"); return sub }
