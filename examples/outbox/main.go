// Command outbox is the seed chapter's refund (§9.10) made safe where the
// fence cannot reach: the payment provider. The fence protects the
// database, not the provider (§9.10.1). So `request` writes the refund
// intent and its outbox row in one fenced transaction (lock
// refund/{intent}): both or neither. `dispatch`, run under `fencegw lock
// outbox/{queue}` (one leader per queue), sends each undelivered row to the
// provider with the intent's id as its idempotency key and records the
// provider's refund with a fenced write: a paused dispatcher's late call is
// the same refund, and its late record is refused. `sweep`, under the same
// lock, settles rows pending longer than a bound by asking the provider
// what it did under the key, never by sending.
//
//	go run ./cmd/fencegw dev --demo examples/outbox               # the gateway, serving this policy
//	go run ./examples/outbox psp --listen 127.0.0.1:9090          # the fake provider
//	go run ./examples/outbox request --intent 8842 --amount 2500  # the intent and its outbox row
//	go build -o outbox ./examples/outbox
//	fencegw lock --wait 1m outbox/refunds -- ./outbox dispatch
//	fencegw lock --wait 1m outbox/refunds -- ./outbox sweep --older-than 1m
//
// examples/README.md shows a dispatcher paused past its lease. A
// dispatch or sweep prints one line per event on stdout.
//
// Exit status: 0 done; 1 a write was refused (a stale token: a newer
// leader holds the queue) or failed, or a message was left pending; 2 usage.
package main

import (
	"context"
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

const usage = `usage: outbox request|dispatch|sweep|psp [flags]  (outbox COMMAND -h for its flags)`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	// `fencegw lock` sends SIGTERM when its lease is lost: stop between
	// messages. Stopping anywhere is safe, as the next leader resumes from
	// the rows.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet("outbox "+cmd, flag.ExitOnError)
	gateway := fs.String("gateway", envOr("FENCEGW_URL", "http://127.0.0.1:8080"), "gateway base URL (FENCEGW_URL)")
	bearer := fs.String("bearer", os.Getenv("FENCEGW_BEARER_TOKEN"), "bearer token, if the policy declares clients (FENCEGW_BEARER_TOKEN)")
	newClient := func() *client.Client { return client.New(*gateway, client.WithBearerToken(*bearer)) }
	var err error
	switch cmd {
	case "request":
		r := requestConfig{}
		fs.StringVar(&r.Intent, "intent", "8842", "the refund intent's id: the provider's idempotency key")
		fs.Int64Var(&r.AmountCents, "amount", 2500, "the refund, in cents")
		fs.StringVar(&r.Queue, "queue", "refunds", "the queue whose dispatcher calls the provider")
		fs.DurationVar(&r.TTL, "ttl", 10*time.Second, "TTL of the lease on refund/INTENT")
		fs.DurationVar(&r.Wait, "wait", time.Minute, "how long to wait for the lock on refund/INTENT")
		_ = fs.Parse(args)
		var in intentState
		if in, err = request(ctx, newClient(), r); err == nil {
			fmt.Printf("request %s: %s, %d cents, message %d on queue %s\n", in.Intent, in.Status, in.AmountCents, in.MessageID, in.Queue)
			if in.PSPRef != "" {
				fmt.Printf("request %s: refunded already, provider refund %s\n", in.Intent, in.PSPRef)
			}
		}
	case "dispatch", "sweep":
		token := fs.String("token", os.Getenv("FENCING_TOKEN"), "fencing token of the lock on outbox/QUEUE (FENCING_TOKEN)")
		queue := fs.String("queue", queueOf(os.Getenv("FENCEGW_RESOURCE")), "the queue (default from FENCEGW_RESOURCE outbox/QUEUE)")
		pspURL := fs.String("psp", "http://127.0.0.1:9090", "the payment provider's base URL")
		pspTimeout := fs.Duration("psp-timeout", time.Minute, "how long to wait for one provider answer")
		noKey := fs.Bool("no-idempotency-key", false, "dispatch: send no idempotency key (the control: a paused dispatcher and its successor both charge)")
		olderThan := fs.Duration("older-than", time.Minute, "sweep: settle messages pending for longer than this")
		_ = fs.Parse(args)
		if *token == "" || *queue == "" {
			fmt.Fprintf(os.Stderr, "outbox %s: want a token and a queue (run it under `fencegw lock outbox/QUEUE --`)\n", cmd)
			os.Exit(2)
		}
		l := leader{c: newClient(), token: *token, queue: *queue, out: os.Stdout}
		p := psp.NewClient(*pspURL, *pspTimeout)
		l.logf("%s %s: token %s", cmd, l.queue, client.Unsigned(l.token))
		err = lead(ctx, cmd, l, p, !*noKey, *olderThan)
	case "psp":
		listen := fs.String("listen", "127.0.0.1:9090", "address to serve the fake payment provider on")
		slow := fs.Duration("slow", 0, "how long the provider takes to answer its first refund request")
		_ = fs.Parse(args)
		err = psp.Serve(ctx, *listen, *slow, os.Stderr)
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	switch {
	case errors.Is(err, client.ErrStaleToken):
		fmt.Printf("outbox %s: refused by the fence, a newer holder has written: %v; stopping\n", cmd, err)
		os.Exit(1)
	case err != nil:
		fmt.Fprintf(os.Stderr, "outbox %s: %v\n", cmd, err)
		os.Exit(1)
	}
}

// lead runs a dispatch or a sweep and says what it did; a message left
// pending is an error.
func lead(ctx context.Context, cmd string, l leader, p *psp.Client, idempotent bool, olderThan time.Duration) error {
	if cmd == "sweep" {
		rep, err := sweep(ctx, l, p, olderThan)
		if err == nil {
			l.logf("sweep %s: done: %d resolved, %d left for the dispatcher, %d unknown", l.queue, rep.Resolved, rep.NotCharged, rep.Unknown)
			if rep.Unknown > 0 {
				err = fmt.Errorf("%d message(s) left pending: the provider did not say what it did", rep.Unknown)
			}
		}
		return err
	}
	rep, err := dispatch(ctx, l, p, idempotent)
	if err == nil {
		l.logf("dispatch %s: drained: %d delivered, %d left pending", l.queue, rep.Delivered, rep.Pending)
		if rep.Pending > 0 {
			err = fmt.Errorf("%d message(s) left pending", rep.Pending)
		}
	}
	return err
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
