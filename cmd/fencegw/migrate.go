package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/schema"
)

func migrateCommand() *cobra.Command {
	var o migrateOptions
	verb := func(use, short string, args cobra.PositionalArgs) *cobra.Command {
		return &cobra.Command{
			Use: use, Short: short, Args: args,
			Example: "  fencegw migrate " + strings.Replace(use, "N", "1", 1) + ` --database-url "$DATABASE_URL"`,
			RunE: func(cmd *cobra.Command, args []string) error {
				return runMigrate(o, cmd.Name(), args, cmd.OutOrStdout())
			},
		}
	}
	cmd := verbGroup("migrate", "apply schema migrations: up | down N | version | force N",
		`Without --dir it applies the gateway's own schema, embedded in the binary.
Up then applies the gateway's functions (fence/sql, guard/sql) that the
database does not hold as this binary defines them.
With --dir it applies an application's migration folder (NNNN_title.up.sql /
.down.sql), recording its version in --table, apart from the gateway's.
Each migration run is printed, then each function defined, then the version
reached.`,
		verb("up", "apply every migration not yet applied", noArgs),
		verb("down N", "undo the newest N migrations", migrationCount(1)),
		verb("version", "print the version applied", noArgs),
		verb("force N", "record version N as applied, clean, after repairing a failed migration by hand", migrationCount(0)),
	)
	cmd.Example = `  fencegw migrate up --database-url "$DATABASE_URL"
  fencegw migrate up --database-url "$DATABASE_URL" --dir migrations --table app_schema_migrations`
	fs := cmd.PersistentFlags()
	bindDatabaseURL(fs, &o.dbURL)
	fs.StringVar(&o.dir, "dir", "", "an application's migration folder instead of the gateway schema")
	fs.StringVar(&o.table, "table", "schema_migrations", "version table for --dir migrations")
	completeFiles(cmd, "dir")
	return cmd
}

// migrationCount is the Args of down and force: one whole number, at
// least least.
func migrationCount(least int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("%w: migrate %s: want one number, got %d arguments", errUsage, cmd.Name(), len(args))
		}
		if n, err := strconv.Atoi(args[0]); err != nil || n < least {
			return fmt.Errorf("%w: migrate %s: %q is not a number of at least %d", errUsage, cmd.Name(), clip.String(args[0], 40), least)
		}
		return nil
	}
}

// migrateOptions are the flags of `fencegw migrate`.
type migrateOptions struct{ dbURL, dir, table string }

// runMigrate runs verb (up, down, version or force) with its arguments.
func runMigrate(o migrateOptions, verb string, args []string, out io.Writer) error {
	if o.dbURL == "" {
		return fmt.Errorf("%w: migrate: no database: set --database-url, FENCEGW_DATABASE_URL or DATABASE_URL", errUsage)
	}
	src := schema.Gateway()
	if o.dir != "" {
		if o.table == schema.GatewayTable {
			return fmt.Errorf("%w: migrate: table %s belongs to the gateway schema", errUsage, schema.GatewayTable)
		}
		if fi, err := os.Stat(o.dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("migrate: --dir %s: no such folder", o.dir)
		}
		src = schema.Dir(o.dir, o.table)
	}
	var n int // down's and force's, checked by migrationCount
	if len(args) == 1 {
		n, _ = strconv.Atoi(args[0])
	}
	m, err := schema.Open(o.dbURL, src)
	if err != nil {
		return err
	}
	defer m.Close()
	m.Report(out)
	switch verb {
	case "up":
		err = m.Up()
	case "down":
		err = m.Down(n)
	case "force":
		err = m.Force(n)
	}
	if err != nil {
		return err
	}
	v, dirty, err := m.Version()
	switch {
	case errors.Is(err, schema.ErrNoVersion):
		fmt.Fprintln(out, "version: none (no migration applied)")
	case err != nil:
		return err
	case dirty:
		fmt.Fprintf(out, "version: %d (dirty: a migration failed halfway; repair it, then `fencegw migrate force N`)\n", v)
	default:
		fmt.Fprintf(out, "version: %d\n", v)
	}
	return nil
}
