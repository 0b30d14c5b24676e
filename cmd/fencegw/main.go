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
  policy    check FILE | schema: validate a policy file and print it compiled,
            or print the JSON Schema of policy files, for editors
  inspect   fences, locks held and their waiters, refused writes, bypasses
  guard     install | check | remove: guard triggers on the policy's tables,
            so that writes bypassing the gateway are refused
  grants    the SQL that gives the gateway's role exactly the privileges it needs
  lock      RESOURCE -- CMD...: run CMD holding the lock, token in FENCING_TOKEN
  bench     measure fenced writes direct via pgx and through the gateway
  torture   run gateways and workers under faults and check no stale write landed
  epoch     show | bump: inspect the token authority, or start a new epoch
            after etcd was restored from a snapshot or replaced
  keys      list | rotate | retire: the keys that sign fencing tokens
  version   print the build: module version, VCS revision (--json)

Run 'fencegw COMMAND -h' for a command's flags.
`

// errUsage marks command-line mistakes: exit status 2, usage printed.
var errUsage = errors.New("usage")

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx := notifySignals()

	err := run(ctx, os.Args[1], os.Args[2:])
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

// run runs the command cmd with its arguments.
func run(ctx context.Context, cmd string, args []string) error {
	switch cmd {
	case "serve":
		return runServe(ctx, args)
	case "dev":
		return runDev(ctx, args, os.Stdout)
	case "migrate":
		return runMigrate(ctx, args)
	case "policy":
		return runPolicy(args)
	case "inspect":
		return runInspect(ctx, args, os.Stdout)
	case "guard":
		return runGuard(ctx, args, os.Stdout)
	case "grants":
		return runGrants(ctx, args, os.Stdout)
	case "epoch":
		return runEpoch(ctx, args)
	case "keys":
		return runKeys(ctx, args, os.Stdout)
	case "lock":
		return runLock(ctx, args)
	case "torture":
		return runTorture(ctx, args, os.Stdout)
	case "torture-worker": // children of `fencegw torture`, not for people
		os.Exit(torture.WorkerMain(args))
	case "torture-etcd":
		os.Exit(torture.MemberMain(args))
	case "bench":
		return runBench(ctx, args, os.Stdout)
	case "version", "-version", "--version":
		return runVersion(args, os.Stdout)
	case "help":
		if len(args) > 0 && args[0] != "help" {
			return run(ctx, args[0], []string{"-h"}) // fencegw help serve
		}
		fmt.Print(usage)
		return nil
	case "-h", "-help", "--help":
		fmt.Print(usage)
		return nil
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
}

// secondSignal is closed when a second SIGTERM or interrupt arrives: the
// first asks a command to stop gracefully, the second to hurry.
var secondSignal = make(chan struct{})

// notifySignals returns a context that ends on the first SIGTERM or
// interrupt, and closes secondSignal on the next.
func notifySignals() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel()
		<-sigs
		close(secondSignal)
	}()
	return ctx
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
