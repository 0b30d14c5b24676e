package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/fencegw/fencegw/schema"
)

const migrateUsage = `usage: fencegw migrate [--database-url URL] [--dir DIR --table TABLE] up | down N | version | force N

Without --dir it applies the gateway's own schema, embedded in the binary.
With --dir it applies an application's migration folder (NNNN_title.up.sql /
.down.sql), recording its version in TABLE, apart from the gateway's.`

func runMigrate(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	dbURL := fs.String("database-url", envOr("", "FENCEGW_DATABASE_URL", "DATABASE_URL"), "PostgreSQL URL (FENCEGW_DATABASE_URL or DATABASE_URL)")
	dir := fs.String("dir", "", "an application's migration folder instead of the gateway schema")
	table := fs.String("table", "schema_migrations", "version table for --dir migrations")
	fs.Usage = func() { fmt.Fprintln(fs.Output(), migrateUsage); fs.PrintDefaults() }
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if *dbURL == "" {
		return fmt.Errorf("%w: migrate: no database: set --database-url, FENCEGW_DATABASE_URL or DATABASE_URL", errUsage)
	}
	src := schema.Gateway()
	if *dir != "" {
		if *table == schema.GatewayTable {
			return fmt.Errorf("%w: migrate: table %s belongs to the gateway schema", errUsage, schema.GatewayTable)
		}
		if fi, err := os.Stat(*dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("migrate: --dir %s: no such folder", *dir)
		}
		src = schema.Dir(*dir, *table)
	}
	verb, n, err := migrateVerb(fs.Args())
	if err != nil {
		return err
	}
	m, err := schema.Open(*dbURL, src)
	if err != nil {
		return err
	}
	defer m.Close()
	m.Report(os.Stdout)
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
		fmt.Println("version: none (no migration applied)")
	case err != nil:
		return err
	case dirty:
		fmt.Printf("version: %d (dirty: a migration failed halfway; repair it, then `fencegw migrate force N`)\n", v)
	default:
		fmt.Printf("version: %d\n", v)
	}
	return nil
}

func migrateVerb(args []string) (verb string, n int, err error) {
	if len(args) == 0 {
		return "", 0, fmt.Errorf("%w: migrate: want up, down N, version or force N", errUsage)
	}
	verb = args[0]
	switch {
	case (verb == "up" || verb == "version") && len(args) == 1:
		return verb, 0, nil
	case (verb == "down" || verb == "force") && len(args) == 2:
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 0 || (verb == "down" && n == 0) {
			return "", 0, fmt.Errorf("%w: migrate %s: %q is not a valid number", errUsage, verb, args[1])
		}
		return verb, n, nil
	}
	return "", 0, fmt.Errorf("%w: migrate: want up, down N, version or force N, got %q", errUsage, args)
}
