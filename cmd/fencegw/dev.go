package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/guard"
	"github.com/fencegw/fencegw/kek"
	"github.com/fencegw/fencegw/policy"

	"github.com/fencegw/fencegw/internal/devserver/etcdserver"
	"github.com/fencegw/fencegw/internal/devserver/pgcluster"
	"github.com/fencegw/fencegw/schema"
)

// defaultDemo is the demo dev serves unless --demo names another folder.
const defaultDemo = "testdata/demo"

// migrationsTable records a demo folder's migrations apart from the
// gateway's: demo_schema_migrations for testdata/demo,
// refund_schema_migrations for examples/refund.
func migrationsTable(dir string) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, strings.ToLower(filepath.Base(filepath.Clean(dir))))
	return name + "_schema_migrations"
}

func devCommand() *cobra.Command {
	var cfg serveConfig
	var demo string
	var adopt bool
	cmd := &cobra.Command{
		Use:   "dev [flags]",
		Short: "run the gateway on embedded defaults: in-process etcd, a throwaway PostgreSQL, the demo",
		Long: `Runs the whole stack in one process for trying fencegw out: an in-process
etcd, a throwaway PostgreSQL from the installed server binaries (unless
--database-url or DATABASE_URL names a server), the demo's migrations, guard and policy; prints what
to try. Nothing it starts outlives it. Flags as serve's, also from FENCEGW_
variables, but for --etcd and its access flags (dev's etcd is its own) and
--policy (--demo's is served); logs are text unless --log-format json.
--unsafe-no-fence tells an example's story without the fence: its control.`,
		Example: `  fencegw dev
  fencegw dev --demo examples/refund --listen 127.0.0.1:8081
  fencegw dev --demo examples/recon --unsafe-no-fence      # the control: stale writes land`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags()); err != nil {
				return err
			}
			return runDev(cmd.Context(), cfg, demo, adopt, cmd.OutOrStdout())
		},
	}
	cfg.bind(cmd, devDefaults)
	bindDatabaseURL(cmd.Flags(), &cfg.DatabaseURL)
	cfg.bindUnsafe(cmd.Flags())
	cfg.hurry = secondSignal
	cfg.command = "dev"
	cmd.Flags().StringVar(&demo, "demo", defaultDemo, "folder with the demo's policy.yaml and migrations/ (e.g. examples/refund)")
	cmd.Flags().BoolVar(&adopt, "adopt-etcd", false, "with DATABASE_URL: start a new epoch if the database knows another etcd cluster (an earlier dev run's)")
	completeFiles(cmd, "demo")
	return cmd
}

// runDev serves `fencegw dev`: the whole stack in one process for trying
// fencegw out. Nothing it starts outlives it.
func runDev(ctx context.Context, cfg serveConfig, demo string, adopt bool, out io.Writer) error {
	if err := cfg.checkValues(); err != nil {
		return err
	}
	cfg.PolicyPath = filepath.Join(demo, "policy.yaml")
	if _, err := os.Stat(cfg.PolicyPath); err != nil {
		return fmt.Errorf("dev: demo policy: %w (run from the repository root or pass --demo DIR)", err)
	}

	if cfg.KEK.File == "" {
		// dev's etcd is new on every run, and so are its keys: a KEK of
		// the run's own, gone with it, seals them.
		dir, err := os.MkdirTemp("", "fencegw-dev-kek-")
		if err != nil {
			return fmt.Errorf("dev: %w", err)
		}
		defer os.RemoveAll(dir)
		cfg.KEK.File = filepath.Join(dir, "token.kek")
		if err := os.WriteFile(cfg.KEK.File, kek.New(), 0o600); err != nil {
			return fmt.Errorf("dev: %w", err)
		}
	}

	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	etcd, err := etcdserver.StartLogged(startCtx, "", cfg.logger())
	if err != nil {
		return fmt.Errorf("dev: etcd: %w", err)
	}
	defer etcd.Close()
	cfg.EtcdEndpoints = etcd.Endpoints()

	dbNote := "from --database-url, FENCEGW_DATABASE_URL or DATABASE_URL"
	if cfg.DatabaseURL == "" {
		pg, err := pgcluster.Start(startCtx, pgcluster.Options{})
		if err != nil {
			return fmt.Errorf("dev: PostgreSQL: %w (or set DATABASE_URL to use a running server)", err)
		}
		defer pg.Stop()
		cfg.DatabaseURL = pg.URL()
		dbNote = "throwaway cluster, deleted on exit"
	}
	if err := schema.Up(cfg.DatabaseURL, schema.Gateway(), schema.Dir(filepath.Join(demo, "migrations"), migrationsTable(demo))); err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	guarded, err := installDemoGuard(startCtx, cfg)
	if err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	if err := adoptDevEtcd(startCtx, cfg.DatabaseURL, cfg.EtcdEndpoints, adopt, out); err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	var key, frontAddr string
	if cfg.SQLFront.Listen != "" {
		var cleanup func()
		if key, cleanup, err = devFront(startCtx, &cfg); err != nil {
			return fmt.Errorf("dev: %w", err)
		}
		defer cleanup()
		cfg.frontBound = func(addr string) { frontAddr = addr }
	}
	return serve(ctx, cfg, func(addr string) {
		sheet := policySheet(addr, cfg, dbNote, guarded)
		if filepath.Clean(demo) == defaultDemo {
			sheet = cheatSheet(addr, cfg, dbNote, guarded)
		}
		if frontAddr != "" {
			sheet = frontSheet(sheet, frontAddr, key, cfg.DatabaseURL, filepath.Clean(demo) == defaultDemo)
		}
		if cfg.UnsafeNoFence {
			// Said where the person looks, besides serve's log line: a
			// control run must not be mistaken for the demo.
			sheet = "\nFENCING IS OFF (--unsafe-no-fence): every token is accepted, stale writes land. A control run, never the real thing.\n" + sheet
		}
		fmt.Fprint(out, sheet)
	})
}

// installDemoGuard puts the guard triggers on the demo policy's guarded
// tables, as an operator would with `fencegw guard install`, and lists
// them: in dev mode as in production, only fenced writes reach them.
func installDemoGuard(ctx context.Context, cfg serveConfig) (string, error) {
	pol, err := policy.Load(cfg.PolicyPath)
	if err != nil {
		return "", err
	}
	if len(pol.Guarded) == 0 {
		return "none (the policy lists no guarded_tables)", nil
	}
	conn, err := openMigrated(ctx, cfg.DatabaseURL, "dev")
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	if err := guard.Install(ctx, conn, pol); err != nil {
		return "", err
	}
	tables := make([]string, len(pol.Guarded))
	for i, g := range pol.Guarded {
		tables[i] = g.Table
	}
	return strings.Join(tables, ", ") + ": writes that bypass the gateway are refused (docs/operations/grants-and-guard.md)", nil
}

func cheatSheet(addr string, cfg serveConfig, dbNote, guarded string) string {
	base := cfg.TLS.scheme() + "://" + addr
	r := strings.NewReplacer("{base}", base, "{db}", cfg.DatabaseURL, "{dbnote}", dbNote,
		"{etcd}", strings.Join(cfg.EtcdEndpoints, ","), "{policy}", cfg.PolicyPath, "{guarded}", guarded)
	return r.Replace(`
fencegw dev is ready. Ctrl-C stops everything it started.

  gateway       {base}
  DATABASE_URL  {db}   ({dbnote})
  etcd          {etcd}   (in-process)
  policy        {policy}   (accounts acct-1 … acct-100, 1000 cents each)
  guarded       {guarded}

Take a lease on account/acct-1 (the answer holds lease_id and token):
  curl -s -X POST {base}/v1/leases -H 'Content-Type: application/json' -d '{"resource": "account/acct-1", "ttl": 10}'

Debit with that token, exactly as granted (replace 1:NN:SIG):
  curl -s -X POST {base}/v1/ops/debit -H 'Fencing-Token: 1:NN:SIG' -d '{"account": "acct-1", "amount_cents": 100}'

Transfer between two accounts, each under its own lease (a token per role):
  curl -s -X POST {base}/v1/ops/transfer -H 'Fencing-Token: from="1:NN:SIG", to="1:MM:SIG"' \
       -d '{"from": "acct-1", "to": "acct-2", "amount_cents": 50}'

Read the balance under the lease's token: the answer holds the account's fence,
and a superseded token reads nothing (409 stale-token):
  curl -s -X POST {base}/v1/reads/balance -H 'Fencing-Token: 1:NN:SIG' -d '{"account": "acct-1"}'

Keep the lease alive, release it:
  curl -s -X POST {base}/v1/leases/LEASE_ID/keepalive
  curl -s -X DELETE {base}/v1/leases/LEASE_ID

A semaphore: export/NAME grants two permits at once (a third waits or is refused),
each a slot with a token and a fence of its own (the token reads 1:NN#1:SIG):
  curl -s -X POST {base}/v1/leases -H 'Content-Type: application/json' -d '{"resource": "export/daily", "ttl": 30}'
  curl -s -X POST {base}/v1/ops/export_batch -H 'Fencing-Token: 1:NN#1:SIG' -d '{"batch": "daily"}'

A bounded hold: a lease on settlement/DAY ends 10 s after its grant, however often
it is renewed (max_hold; its keepalive then answers 404); ops settle_day {"day"}:
  curl -s -X POST {base}/v1/leases -H 'Content-Type: application/json' -d '{"resource": "settlement/2026-10-18", "ttl": 5}'

A lock delay: once a lease on payout/ACCOUNT EXPIRES (not when released), nobody
gets it for 10 s (lock_delay; a request meanwhile answers 409 locked); ops pay_out {"account"}:
  curl -s -X POST {base}/v1/leases -H 'Content-Type: application/json' -d '{"resource": "payout/acct-1", "ttl": 1}'

Health and metrics: {base}/readyz  {base}/metrics

`)
}

// policySheet is the cheat-sheet for a demo folder other than the default:
// what is serving, and the policy's operations with their resources.
func policySheet(addr string, cfg serveConfig, dbNote, guarded string) string {
	var b strings.Builder
	base := cfg.TLS.scheme() + "://" + addr
	fmt.Fprintf(&b, "\nfencegw dev is ready. Ctrl-C stops everything it started.\n\n")
	fmt.Fprintf(&b, "  gateway       %s\n  DATABASE_URL  %s   (%s)\n  etcd          %s   (in-process)\n  policy        %s\n  guarded       %s\n\n",
		base, cfg.DatabaseURL, dbNote, strings.Join(cfg.EtcdEndpoints, ","), cfg.PolicyPath, guarded)
	if pol, err := policy.Load(cfg.PolicyPath); err == nil {
		b.WriteString("Operations (POST /v1/ops/NAME, reads POST /v1/reads/NAME, with a lease's token on each resource):\n")
		for _, name := range pol.OperationNames() {
			op := pol.Operations[name]
			keys := make([]string, len(op.Roles))
			for i, r := range op.Roles {
				keys[i] = strings.TrimPrefix(r.Name+": ", ": ") + r.Template.String()
			}
			kind := ""
			if op.Read {
				kind = "  (read)"
			}
			fmt.Fprintf(&b, "  %-20s %s%s\n", name, strings.Join(keys, ", "), kind)
		}
	}
	fmt.Fprintf(&b, "\nHealth and metrics: %s/readyz  %s/metrics\n\n", base, base)
	return b.String()
}

// adoptDevEtcd deals with a database that already knows another etcd
// cluster: dev mode's etcd is new on every run, so a DATABASE_URL kept
// between runs sees "another cluster" and halts, exactly as it must in
// production. With adopt it starts a new epoch (tokens of earlier runs
// become stale); without, it refuses to start, because a bump would also
// halt any other gateway using that database.
func adoptDevEtcd(ctx context.Context, dbURL string, etcd []string, adopt bool, out io.Writer) error {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	cli, err := authority.Dial(etcd) // dev's own etcd: plaintext, whatever the environment says
	if err != nil {
		return err
	}
	defer cli.Close()
	auth := authority.NewEtcd(cli, nil)
	view, err := auth.View(ctx)
	if err != nil {
		return err
	}
	rec, err := fence.Records{DB: pool}.Load(ctx)
	if err != nil {
		return err
	}
	known := rec.ClusterID
	if (known == "" || known == view.ClusterID) && (rec.Identity == "" || rec.Identity == view.Identity) {
		return nil
	}
	if !adopt {
		return fmt.Errorf("the database knows another etcd cluster (%s), and dev's etcd is new on every run: "+
			"pass --adopt-etcd to start a new epoch there (every other gateway using that database halts), or use a database of your own", known)
	}
	epoch, err := authority.Bump(ctx, auth, fence.Records{DB: pool})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "dev: the database knew another etcd cluster (an earlier run's); started epoch %d\n", epoch)
	return nil
}
