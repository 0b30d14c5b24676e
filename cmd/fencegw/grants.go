package main

import (
	"context"
	"fmt"
	"github.com/jackc/pgx/v5"
	"io"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/guard"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/schema"
)

func grantsCommand() *cobra.Command {
	var cfg serveConfig
	var role string
	var apply bool
	cmd := &cobra.Command{
		Use:   "grants --database-url URL --policy FILE --role ROLE",
		Short: "print the SQL that gives the gateway's role exactly the privileges it needs",
		Long: `Prints the SQL that gives ROLE exactly what fencegw serve needs to run the
policy on this database, and nothing else: the gateway's schema, the
recorded schema version, and on each application table what the policy's
statements do to it, as PostgreSQL plans them (tables read: SELECT; written:
INSERT, UPDATE, DELETE; the sequences their inserts draw from). Run it as
the tables' owner after fencegw migrate up; it creates no role and changes
nothing. The role needs no ownership and no other grant; fencegw inspect
works as it too. fencegw.bypass is for operators only (see guard install).
--apply grants them itself, in one transaction.`,
		Example: `  fencegw grants --database-url "$DATABASE_URL" --policy policy.yaml --role fencegw_gateway | psql "$DATABASE_URL"`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGrants(cmd.Context(), cfg, role, apply, cmd.OutOrStdout())
		},
	}
	cfg.bindBackends(cmd, cmd.Flags(), databaseAndPol)
	cmd.Flags().StringVar(&role, "role", "", "the role fencegw serve connects as")
	cmd.Flags().BoolVar(&apply, "apply", false, "grant them, in one transaction, instead of printing them (where no psql is at hand: the image)")
	return cmd
}

// runGrants serves `fencegw grants`.
func runGrants(ctx context.Context, cfg serveConfig, role string, apply bool, out io.Writer) error {
	switch {
	case cfg.DatabaseURL == "" || cfg.PolicyPath == "" || role == "":
		return fmt.Errorf("%w: grants: needs --database-url, --policy and --role", errUsage)
	case strings.ContainsFunc(role, unicode.IsControl):
		return fmt.Errorf("%w: grants: --role %q: a role name without control characters (line breaks end the statement when psql reads the output)", errUsage, role)
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
	sql, err := guard.Grants(ctx, conn, pol, role, schema.GatewayTable)
	if err != nil {
		return err
	}
	if !apply {
		_, err = fmt.Fprint(out, sql)
		return err
	}
	// One transaction: the role gets all of it or nothing.
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, sql)
		return err
	}); err != nil {
		return fmt.Errorf("grants: applying them as %s: %w", conn.Config().User, err)
	}
	fmt.Fprintf(out, "grants: %s has exactly what fencegw serve needs to run %s\n", role, cfg.PolicyPath)
	return nil
}
