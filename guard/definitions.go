package guard

import (
	"embed"
	"io/fs"
)

//go:embed sql/*.sql
var definitions embed.FS

// Definitions returns the current SQL of the functions the guard triggers
// call, one file each (sql/NAME.sql defines fencegw.NAME): guard_row,
// guard_truncate, and bypass and bypassed, which let an operator write
// past them. Package schema applies them after the gateway's migrations,
// and again whenever the database holds something else.
func Definitions() fs.FS { sub, _ := fs.Sub(definitions, "sql"); return sub }
