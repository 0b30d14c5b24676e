// Command fencegw is the fencing-aware SQL write gateway: one binary to
// serve, run a local dev stack, migrate schemas and check policies.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/fencegw/fencegw/internal/torture"
)

const usage = `usage: fencegw COMMAND [flags]

commands:
  serve     run the gateway (config from flags and FENCEGW_* environment)
  dev       run the gateway on embedded defaults: in-process etcd, a throwaway
            PostgreSQL unless DATABASE_URL is set, the demo policy and data
  migrate   apply schema migrations: up | down N | version | force N
  policy    check FILE: validate a policy file and print it compiled
  inspect   fences, locks held and their waiters, refused writes, bypasses
  guard     install | check | remove: guard triggers on the policy's tables,
            so that writes bypassing the gateway are refused
  lock      RESOURCE -- CMD...: run CMD holding the lock, token in FENCING_TOKEN
  bench     measure fenced writes direct via pgx and through the gateway
  torture   run gateways and workers under faults and check no stale write landed
  epoch     show | bump: inspect the token authority, or start a new epoch
            after etcd was restored from a snapshot or replaced
  keys      list | rotate | retire: the keys that sign fencing tokens

Run 'fencegw COMMAND -h' for a command's flags.
`

// errUsage marks command-line mistakes: exit status 2, usage printed.
var errUsage = errors.New("usage")

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "serve":
		err = runServe(ctx, args)
	case "dev":
		err = runDev(ctx, args, os.Stdout)
	case "migrate":
		err = runMigrate(ctx, args)
	case "policy":
		err = runPolicy(args)
	case "inspect":
		err = runInspect(ctx, args, os.Stdout)
	case "guard":
		err = runGuard(ctx, args, os.Stdout)
	case "epoch":
		err = runEpoch(ctx, args)
	case "keys":
		err = runKeys(ctx, args, os.Stdout)
	case "lock":
		err = runLock(ctx, args)
	case "torture":
		err = runTorture(ctx, args, os.Stdout)
	case "torture-worker": // children of `fencegw torture`, not for people
		os.Exit(torture.WorkerMain(args))
	case "torture-etcd":
		os.Exit(torture.MemberMain(args))
	case "bench":
		err = runBench(ctx, args, os.Stdout)
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
		return
	default:
		err = fmt.Errorf("%w: unknown command %q", errUsage, cmd)
	}
	var exit *exitError
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.As(err, &exit):
		fmt.Fprintf(os.Stderr, "fencegw: %v\n", err)
		os.Exit(exit.code)
	case errors.Is(err, errUsage):
		fmt.Fprintf(os.Stderr, "fencegw: %v\n\n%s", err, usage)
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "fencegw: %v\n", err)
		os.Exit(1)
	}
}

// envOr returns the first non-empty environment variable of names, or def.
func envOr(def string, names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return def
}
