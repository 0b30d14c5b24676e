package schema

import (
	"embed"
	"io/fs"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/guard"
)

//go:embed migrations/*.sql
var embedded embed.FS

// GatewayTable is the version table of the gateway's own migrations; an
// application's migrations keep theirs elsewhere, so both can be applied to
// one database independently.
const GatewayTable = "fencegw_schema_migrations"

// Gateway returns the gateway's own schema: its migrations, embedded, which
// change tables and are history, and the definitions of its functions,
// which live beside the Go that calls them (fence/sql, guard/sql).
func Gateway() Source {
	sub, _ := fs.Sub(embedded, "migrations")
	return Source{FS: sub, Table: GatewayTable, Definitions: []fs.FS{fence.Definitions(), guard.Definitions()}}
}
