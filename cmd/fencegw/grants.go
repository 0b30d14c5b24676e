package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"

	"github.com/fencegw/fencegw/guard"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/schema"
)

const grantsUsage = `usage: fencegw grants --database-url URL --policy FILE --role ROLE

Prints the SQL that gives ROLE exactly what fencegw serve needs to run the
policy on this database, and nothing else: the gateway's schema, the
recorded schema version, and on each application table what the policy's
statements do to it, as PostgreSQL plans them (tables read: SELECT; written:
INSERT, UPDATE, DELETE; the sequences their inserts draw from). Run it as
the tables' owner after fencegw migrate up; it creates no role and changes
nothing. The role needs no ownership and no other grant; fencegw inspect
works as it too. fencegw.bypass is for operators only (see guard install).

example:
  fencegw grants --database-url "$DATABASE_URL" --policy policy.yaml --role fencegw_gateway | psql "$DATABASE_URL"

flags:`

// runGrants serves `fencegw grants`.
func runGrants(ctx context.Context, args []string, out io.Writer) error {
	var cfg serveConfig
	fs := flag.NewFlagSet("grants", flag.ContinueOnError)
	withUsage(fs, grantsUsage)
	fs.StringVar(&cfg.DatabaseURL, "database-url", envOr("", "FENCEGW_DATABASE_URL", "DATABASE_URL"), "PostgreSQL URL (FENCEGW_DATABASE_URL or DATABASE_URL)")
	fs.StringVar(&cfg.PolicyPath, "policy", envOr("", "FENCEGW_POLICY"), "policy file (FENCEGW_POLICY)")
	role := fs.String("role", "", "the role fencegw serve connects as")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: grants takes no arguments, got %q", errUsage, fs.Args())
	case cfg.DatabaseURL == "" || cfg.PolicyPath == "" || *role == "":
		return fmt.Errorf("%w: grants: needs --database-url, --policy and --role", errUsage)
	case strings.ContainsFunc(*role, unicode.IsControl):
		return fmt.Errorf("%w: grants: --role %q: a role name without control characters (line breaks end the statement when psql reads the output)", errUsage, *role)
	}
	pol, err := policy.Load(cfg.PolicyPath)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := openMigrated(ctx, cfg.DatabaseURL, "grants")
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	sql, err := guard.Grants(ctx, conn, pol, *role, schema.GatewayTable)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(out, sql)
	return err
}
