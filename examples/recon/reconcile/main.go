// Command reconcile is the nightly reconciliation job of the book
// chapter's opening story: it posts one day's ledger entries through a
// gateway serving examples/recon/policy.yaml, every write fenced by the
// token of the lock `fencegw lock` holds for it.
//
//	go build -o reconcile ./examples/recon/reconcile
//	fencegw lock --gateway http://127.0.0.1:8080 --ttl 10s --wait 60s recon/2026-10-18 -- ./reconcile
//
// `fencegw lock` sets FENCING_TOKEN, FENCEGW_RESOURCE and FENCEGW_URL,
// from which the flags take their defaults. The job starts the day afresh,
// posts its entries in chunks, and marks the day finished; a day finished
// already leaves it nothing to do. Exit status: 0 the day is finished (by
// this run or an earlier one), 1 a write was refused or failed (a stale
// token: a newer holder has written), 2 usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/fencegw/fencegw/client"
)

func main() {
	var cfg config
	day, _ := strings.CutPrefix(os.Getenv("FENCEGW_RESOURCE"), "recon/")
	flag.StringVar(&cfg.Gateway, "gateway", envOr("FENCEGW_URL", "http://127.0.0.1:8080"), "gateway base URL (FENCEGW_URL)")
	flag.StringVar(&cfg.Bearer, "bearer", os.Getenv("FENCEGW_BEARER_TOKEN"), "bearer token, if the policy declares clients (FENCEGW_BEARER_TOKEN)")
	flag.StringVar(&cfg.Token, "token", os.Getenv("FENCING_TOKEN"), "fencing token of the lock on recon/DAY (FENCING_TOKEN)")
	flag.StringVar(&cfg.Day, "day", day, "day to reconcile, YYYY-MM-DD (default from FENCEGW_RESOURCE recon/DAY)")
	flag.IntVar(&cfg.Entries, "entries", 20, "entries the day's reconciliation posts")
	flag.IntVar(&cfg.Chunk, "chunk", 5, "entries per write")
	flag.Parse()
	if cfg.Token == "" || cfg.Day == "" || cfg.Entries < 1 || cfg.Chunk < 1 {
		fmt.Fprintln(os.Stderr, "reconcile: want a token, a day, and at least one entry per chunk (run it under `fencegw lock recon/DAY --`)")
		os.Exit(2)
	}
	// `fencegw lock` sends SIGTERM when its lease is lost: stop between
	// writes. Stopping anywhere is safe, as the next run starts afresh.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, client.New(cfg.Gateway, client.WithBearerToken(cfg.Bearer)), cfg, os.Stdout)
	switch {
	case errors.Is(err, client.ErrStaleToken):
		fmt.Printf("reconcile %s: refused by the fence, a newer holder has written: %v; stopping\n", cfg.Day, err)
		os.Exit(1)
	case err != nil:
		fmt.Fprintf(os.Stderr, "reconcile %s: %v\n", cfg.Day, err)
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
