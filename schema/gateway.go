package schema

import (
	"embed"
	"io/fs"
)

//go:embed migrations/*.sql
var embedded embed.FS

// GatewayTable is the version table of the gateway's own migrations; an
// application's migrations keep theirs elsewhere, so both can be applied to
// one database independently.
const GatewayTable = "fencegw_schema_migrations"

// Gateway returns the gateway's own schema: its migrations, embedded, which
// change tables.
func Gateway() Source {
	sub, _ := fs.Sub(embedded, "migrations")
	return Source{FS: sub, Table: GatewayTable}
}
