// Command refund is the seed chapter's refund worker (§9.10.3): "refund
// intent 8842 is processed once", though the lock's TTL is shorter than a
// slow payment provider's answer and a second worker may take over while
// the first still waits. Three things in order make it safe: claim the
// intent before calling the provider; call the provider with the intent's
// id as its idempotency key, and on a timeout ask it what it did rather
// than send again; record the result through the gateway, fenced, pending
// -> done only. A worker whose lease expired meanwhile cannot record: its
// token is stale.
//
//	go run ./cmd/fencegw dev --demo examples/refund                  # the gateway, serving this policy
//	go run ./examples/refund --psp-listen 127.0.0.1:9090 --psp-slow 45s  # the provider: first answer after 45 s
//	go run ./examples/refund --ttl 3s                               # worker A: Ctrl-Z while it waits for the provider
//	go run ./examples/refund                                        # worker B: takes over, gets the same refund, records it
//	fg                                                              # A wakes up: its record is refused, stale-token
//
// A run prints what it did (--json: one JSON document); it exits 1 if it
// did not get the intent refunded or find it done.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/examples/internal/psp"
)

// config is what a run does.
type config struct {
	Gateway     string
	Bearer      string
	Intent      string
	AmountCents int64
	TTL, Wait   time.Duration
	PSP         string        // the payment provider's base URL
	PSPTimeout  time.Duration // for one provider request
	// NoIdempotencyKey is the control: the provider hears no key, so a
	// worker that took over has it refund again.
	NoIdempotencyKey bool
	Log              func(format string, args ...any)
}

func (cfg config) logf(format string, args ...any) {
	if cfg.Log != nil {
		cfg.Log(format, args...)
	}
}

// report is what a run did.
type report struct {
	Intent  string `json:"intent"`
	Outcome string `json:"outcome"` // refunded, already-done, or why not: a problem kind (stale-token), "error"
	Token   string `json:"token,omitempty"`
	PSPRef  string `json:"psp_ref,omitempty"`
	Queried bool   `json:"queried_psp,omitempty"` // the refund came from asking the provider after an unanswered request
	Error   string `json:"error,omitempty"`
}

func main() {
	var cfg config
	flag.StringVar(&cfg.Gateway, "gateway", envOr("FENCEGW_URL", "http://127.0.0.1:8080"), "gateway base URL (FENCEGW_URL)")
	flag.StringVar(&cfg.Bearer, "bearer", os.Getenv("FENCEGW_BEARER_TOKEN"), "bearer token, if the policy declares clients (FENCEGW_BEARER_TOKEN)")
	flag.StringVar(&cfg.Intent, "intent", "8842", "the refund intent's id")
	flag.Int64Var(&cfg.AmountCents, "amount", 2500, "the refund, in cents")
	flag.DurationVar(&cfg.TTL, "ttl", 30*time.Second, "lease TTL")
	flag.DurationVar(&cfg.Wait, "wait", time.Minute, "how long to wait for the lock")
	flag.StringVar(&cfg.PSP, "psp", "http://127.0.0.1:9090", "the payment provider's base URL")
	flag.DurationVar(&cfg.PSPTimeout, "psp-timeout", time.Minute, "how long to wait for one provider answer before asking it what it did")
	pspListen := flag.String("psp-listen", "", "serve the fake payment provider on this address instead of running a worker")
	pspSlow := flag.Duration("psp-slow", 0, "with --psp-listen: how long the provider takes to answer its first refund request")
	flag.BoolVar(&cfg.NoIdempotencyKey, "no-idempotency-key", false, "the control: send the provider no idempotency key (a worker that takes over has it refund again: two charges)")
	asJSON := flag.Bool("json", false, "print the report as one JSON document")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if !*asJSON {
		cfg.Log = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	}
	if *pspListen != "" {
		if err := psp.Serve(ctx, *pspListen, *pspSlow, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "refund: provider:", err)
			os.Exit(2)
		}
		return
	}
	rep, err := refundOnce(ctx, cfg, client.New(cfg.Gateway, client.WithBearerToken(cfg.Bearer)), psp.NewClient(cfg.PSP, cfg.PSPTimeout))
	if err != nil {
		rep.Outcome, rep.Error = outcome(err), err.Error()
	}
	if *asJSON {
		_ = json.NewEncoder(os.Stdout).Encode(rep)
	} else {
		fmt.Printf("refund %s: %s, token %s, provider refund %q\n", rep.Intent, rep.Outcome, rep.Token, rep.PSPRef)
		if err != nil {
			fmt.Println(" ", err)
		}
	}
	if err != nil {
		os.Exit(1)
	}
}

// outcome names an error by its problem kind, or "error".
func outcome(err error) string {
	var p *client.ProblemError
	if errors.As(err, &p) && p.Kind() != "" {
		return p.Kind()
	}
	return "error"
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
