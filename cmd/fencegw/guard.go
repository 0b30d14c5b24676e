package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/fencegw/fencegw/guard"
	"github.com/fencegw/fencegw/policy"
)

const guardUsage = `usage: fencegw guard --database-url URL --policy FILE install | check | remove

install  puts guard triggers on the policy's guarded_tables (all or none):
         PostgreSQL then refuses a write to their rows unless it is a
         gateway write fenced on the row's resource, or follows
         SELECT fencegw.bypass('why') in its transaction (logged in
         fencegw.bypass_log). Run it again after changing guarded_tables.
check    says which guarded tables lack their triggers; exit status 1 if any.
remove   takes the triggers off the policy's guarded tables.`

// guardGrants is printed after install: the triggers stop accidents; the
// privileges decide who can write at all.
const guardGrants = `
The triggers refuse every role that cannot write fencegw.fences, except
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
func runGuard(ctx context.Context, args []string, out io.Writer) error {
	var cfg serveConfig
	fs := flag.NewFlagSet("guard", flag.ContinueOnError)
	cfg.bindBackends(fs, databaseAndPol)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), guardUsage); fs.PrintDefaults() }
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	action := fs.Arg(0)
	if fs.NArg() != 1 || (action != "install" && action != "check" && action != "remove") {
		return fmt.Errorf("%w: guard: want install, check or remove", errUsage)
	}
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
			fmt.Fprintf(out, "guarded %s: rows of %s\n", g.Table, g.Resource.Name)
		}
		fmt.Fprintf(out, guardGrants, tables)
		return nil
	case "remove":
		if err := guard.Remove(ctx, conn, pol); err != nil {
			return err
		}
		fmt.Fprintf(out, "removed the guard triggers from %d table(s)\n", len(pol.Guarded))
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
