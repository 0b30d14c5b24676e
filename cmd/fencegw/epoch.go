package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
)

func epochCommand() *cobra.Command {
	var cfg serveConfig
	var dryRun bool
	verb := func(name, short, long string) *cobra.Command {
		return &cobra.Command{
			Use: name, Short: short, Long: long,
			Example: "  fencegw epoch " + name + " --database-url \"$DATABASE_URL\" --etcd e1:2379,e2:2379,e3:2379",
			Args:    noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				action := name
				if name == "bump" && dryRun {
					action = "plan"
				}
				return etcdError("epoch", cfg, runEpoch(cmd.Context(), cfg, action, cmd.OutOrStdout()))
			},
		}
	}
	bump := verb("bump", "start a new epoch after etcd was restored from a snapshot or replaced",
		`Starts a new epoch after etcd was restored from a snapshot or replaced:
every token of an older epoch is refused from then on, and gateways that
halted because etcd went backwards resume within --authority-check.
--dry-run says what it would do and changes nothing.`)
	bump.Flags().BoolVar(&dryRun, "dry-run", false, "say what the bump would do, change nothing")
	cmd := verbGroup("epoch", "inspect the token authority, or start a new epoch after etcd was restored",
		`A token is EPOCH:REVISION. The epoch changes only by fencegw epoch bump,
after etcd was restored from a snapshot or replaced by another cluster.`,
		verb("show", "print what etcd and PostgreSQL say about the token authority", ""), bump,
	)
	cmd.Example = `  fencegw epoch show --database-url "$DATABASE_URL" --etcd e1:2379
  fencegw epoch bump --database-url "$DATABASE_URL" --etcd e1:2379   # after an etcd restore`
	cfg.bindBackends(cmd, cmd.PersistentFlags(), databaseAndEtcd)
	return cmd
}

// runEpoch serves `fencegw epoch show|bump`; action "plan" is bump's
// --dry-run.
func runEpoch(ctx context.Context, cfg serveConfig, action string, out io.Writer) error {
	if cfg.DatabaseURL == "" || len(cfg.EtcdEndpoints) == 0 {
		return fmt.Errorf("%w: epoch: needs --database-url and --etcd", errUsage)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("epoch: database: %w", err)
	}
	defer pool.Close()
	cli, err := dialEtcd(ctx, cfg, "epoch")
	if err != nil {
		return err
	}
	defer cli.Close()
	auth := authority.NewEtcd(cli, nil)

	switch action {
	case "plan":
		p, err := authority.PlanBump(ctx, auth, fence.Records{DB: pool})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "dry run, nothing changed: the bump would start epoch %d (etcd's is %d, PostgreSQL's %d); tokens of epoch %d and older would be refused from then on\n",
			p.To, p.Etcd.Epoch, p.Recorded.Epoch, p.From)
		if p.Foreign {
			fmt.Fprintln(out, "it would first delete etcd's epoch and identity keys, which hold what fencegw never writes")
		}
		if p.Identify {
			fmt.Fprintln(out, "it would give etcd's data an identity, which it has none of yet")
		}
		return nil
	case "bump":
		epoch, err := authority.Bump(ctx, auth, fence.Records{DB: pool})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "epoch bumped to %d: tokens of earlier epochs are refused from now on\n", epoch)
		return nil
	}
	view, err := auth.View(ctx)
	switch {
	case errors.Is(err, authority.ErrForeignKey):
		fmt.Fprintf(out, "etcd:       %v (fencegw epoch bump replaces it)\n", err)
	case err != nil:
		return err
	default:
		fmt.Fprintf(out, "etcd:       epoch %d, cluster %s, identity %s, revision %d\n", view.Epoch, view.ClusterID, cmp.Or(view.Identity, "-"), view.Revision)
	}
	history, err := fence.Records{DB: pool}.History(ctx)
	if err != nil {
		return err
	}
	for _, rec := range history {
		fmt.Fprintf(out, "PostgreSQL: epoch %d, cluster %s, identity %s, highest revision seen %d\n", rec.Epoch, cmp.Or(rec.ClusterID, "-"), cmp.Or(rec.Identity, "-"), rec.MaxRevision)
	}
	return nil
}
