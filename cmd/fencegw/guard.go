package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/guard"
	"github.com/fencegw/fencegw/policy"
)

func guardCommand() *cobra.Command {
	var cfg serveConfig
	verb := func(name, short, long string) *cobra.Command {
		return &cobra.Command{
			Use: name + " --database-url URL --policy FILE", Short: short, Long: long,
			Example: "  fencegw guard " + name + ` --database-url "$DATABASE_URL" --policy policy.yaml`,
			Args:    noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return runGuard(cmd.Context(), cfg, name, cmd.OutOrStdout())
			},
		}
	}
	cmd := verbGroup("guard", "install, check or remove the guard triggers on the policy's tables",
		`Guard triggers on the policy's guarded_tables make PostgreSQL refuse
writes to their rows that bypass the gateway.`,
		verb("install", "put guard triggers on the policy's guarded_tables (all or none)",
			`Puts guard triggers on the policy's guarded_tables (all or none):
PostgreSQL then refuses a write to their rows unless it is a gateway write
fenced on the row's resource, or follows SELECT fencegw.bypass('why') in
its transaction (logged in fencegw.bypass_log). Run it again after
changing guarded_tables.`),
		verb("check", "say which guarded tables lack their triggers; exit status 1 if any", ""),
		verb("remove", "take the triggers off the policy's guarded tables", ""),
	)
	cmd.Example = `  fencegw guard install --database-url "$DATABASE_URL" --policy policy.yaml
  fencegw guard check --database-url "$DATABASE_URL" --policy policy.yaml`
	cfg.bindBackends(cmd, cmd.PersistentFlags(), databaseAndPol)
	return cmd
}

// guardGrants is printed after install: the triggers stop accidents; the
// privileges decide who can write at all.
const guardGrants = `
The triggers refuse every role that may not call fencegw.fence, except
the tables' owner and superusers, who can turn them off, and roles granted
TRIGGER on them, whose triggers would run inside the gateway's writes.
Run the gateway as a role that owns neither the tables nor anything else,
let only it write them, and only operators declare a bypass, e.g.

  REVOKE INSERT, UPDATE, DELETE, TRUNCATE, TRIGGER ON %[1]s FROM PUBLIC, <other roles>;
  GRANT  INSERT, UPDATE, DELETE ON %[1]s TO <gateway role>;
  GRANT  USAGE ON SCHEMA fencegw TO <operator role>;
  GRANT  EXECUTE ON FUNCTION fencegw.bypass(text) TO <operator role>;
`

// runGuard serves `fencegw guard install|check|remove`.
func runGuard(ctx context.Context, cfg serveConfig, action string, out io.Writer) error {
	if cfg.DatabaseURL == "" || cfg.PolicyPath == "" {
		return fmt.Errorf("%w: guard: needs --database-url and --policy", errUsage)
	}
	pol, err := policy.Load(cfg.PolicyPath)
	if err != nil {
		return err
	}
	if len(pol.Guarded) == 0 {
		return fmt.Errorf("guard: %s lists no guarded_tables", cfg.PolicyPath)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := openMigrated(ctx, cfg.DatabaseURL, "guard")
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())

	switch action {
	case "install":
		if err := guard.Install(ctx, conn, pol); err != nil {
			return err
		}
		tables := ""
		for i, g := range pol.Guarded {
			if i > 0 {
				tables += ", "
			}
			tables += g.Table
			fmt.Fprintf(out, "guarded %s: rows of %s\n", g.Table, g.Kind.Name)
		}
		fmt.Fprintf(out, guardGrants, tables)
		return nil
	case "remove":
		missing, err := guard.Remove(ctx, conn, pol)
		if err != nil {
			return err
		}
		for _, t := range missing {
			fmt.Fprintf(out, "%s: no such table, nothing to remove\n", t)
		}
		fmt.Fprintf(out, "removed the guard triggers from %d table(s)\n", len(pol.Guarded)-len(missing))
		return nil
	}
	statuses, err := guard.Check(ctx, conn, pol)
	for _, s := range statuses {
		fmt.Fprintf(out, "%-40s %s\n", s.Table, cmp.Or(s.Problem, "guarded"))
	}
	if errors.Is(err, guard.ErrNotGuarded) {
		return fmt.Errorf("%w: run fencegw guard install", err)
	}
	return err
}
