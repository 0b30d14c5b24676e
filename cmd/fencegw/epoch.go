package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

const epochUsage = `usage: fencegw epoch [--database-url URL] [--etcd ENDPOINTS] show | bump

show  prints what etcd and PostgreSQL say about the token authority.
bump  starts a new epoch after etcd was restored from a snapshot or replaced:
      every token of an older epoch is refused from then on, and gateways
      that halted because etcd went backwards resume within --authority-check.`

// runEpoch serves `fencegw epoch show|bump`.
func runEpoch(ctx context.Context, args []string) error {
	var cfg serveConfig
	fs := flag.NewFlagSet("epoch", flag.ContinueOnError)
	cfg.bindBackends(fs, databaseAndEtcd)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), epochUsage); fs.PrintDefaults() }
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || (fs.Arg(0) != "show" && fs.Arg(0) != "bump") {
		return fmt.Errorf("%w: epoch: want show or bump", errUsage)
	}
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
	cli, err := dialEtcd(cfg.EtcdEndpoints)
	if err != nil {
		return fmt.Errorf("epoch: etcd: %w", err)
	}
	defer cli.Close()
	auth := authority.NewEtcd(cli)

	if fs.Arg(0) == "bump" {
		epoch, err := authority.Bump(ctx, auth, fence.Records{DB: pool})
		if err != nil {
			return err
		}
		fmt.Printf("epoch bumped to %d: tokens of earlier epochs are refused from now on\n", epoch)
		return nil
	}
	view, err := auth.View(ctx)
	switch {
	case errors.Is(err, authority.ErrForeignKey):
		fmt.Printf("etcd:       %v (fencegw epoch bump replaces it)\n", err)
	case err != nil:
		return err
	default:
		fmt.Printf("etcd:       epoch %d, cluster %s, identity %s, revision %d\n", view.Epoch, view.ClusterID, cmp.Or(view.Identity, "-"), view.Revision)
	}
	history, err := fence.Records{DB: pool}.History(ctx)
	if err != nil {
		return err
	}
	for _, rec := range history {
		fmt.Printf("PostgreSQL: epoch %d, cluster %s, identity %s, highest revision seen %d\n", rec.Epoch, cmp.Or(rec.ClusterID, "-"), cmp.Or(rec.Identity, "-"), rec.MaxRevision)
	}
	return nil
}
