// Command transfer moves money between the demo's accounts from many
// concurrent clients, in both directions, each transfer under the leases of
// both its accounts: the seed's "two locks, one write" made safe by
// fencing both resources in one transaction.
//
//	go run ./examples/transfer --gateway http://127.0.0.1:8080
//
// It needs a gateway serving the demo policy (`fencegw dev` does), and
// prints what happened to every transfer. A transfer refused for want of
// money is fine; any other refusal is a failure (exit 1).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"sort"
	"sync"
	"time"

	"github.com/fencegw/fencegw/client"
)

// config is what a run does.
type config struct {
	Gateway   string
	Bearer    string
	Accounts  int // acct-1 .. acct-N
	Clients   int
	Transfers int // in all
	TTL, Wait time.Duration
	Seed      uint64
}

// report is what a run saw, by outcome: ok, or the problem kind.
type report struct {
	Outcomes map[string]int `json:"outcomes"`
	Seconds  float64        `json:"seconds"`
}

func main() {
	var cfg config
	flag.StringVar(&cfg.Gateway, "gateway", envOr("FENCEGW_URL", "http://127.0.0.1:8080"), "gateway base URL (FENCEGW_URL)")
	flag.StringVar(&cfg.Bearer, "bearer", os.Getenv("FENCEGW_BEARER_TOKEN"), "bearer token, if the policy declares clients (FENCEGW_BEARER_TOKEN)")
	flag.IntVar(&cfg.Accounts, "accounts", 20, "transfer among acct-1 .. acct-N")
	flag.IntVar(&cfg.Clients, "clients", 16, "concurrent clients")
	flag.IntVar(&cfg.Transfers, "transfers", 400, "transfers in all")
	flag.DurationVar(&cfg.TTL, "ttl", 5*time.Second, "lease TTL")
	flag.DurationVar(&cfg.Wait, "wait", 30*time.Second, "how long a client waits for each lock")
	flag.Uint64Var(&cfg.Seed, "seed", uint64(time.Now().UnixNano()), "random seed")
	asJSON := flag.Bool("json", false, "print the report as one JSON document")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "transfer:", err)
		os.Exit(2)
	}
	if *asJSON {
		_ = json.NewEncoder(os.Stdout).Encode(rep)
	} else {
		rep.print(os.Stdout)
	}
	if rep.failures() > 0 {
		os.Exit(1)
	}
}

// run makes cfg.Transfers transfers from cfg.Clients clients.
func run(ctx context.Context, cfg config) (*report, error) {
	if cfg.Accounts < 2 || cfg.Clients < 1 || cfg.Transfers < 0 {
		return nil, errors.New("want at least 2 accounts, 1 client and no negative count")
	}
	c := client.New(cfg.Gateway, client.WithBearerToken(cfg.Bearer))
	rep := &report{Outcomes: map[string]int{}}
	var mu sync.Mutex
	count := func(outcome string) {
		mu.Lock()
		rep.Outcomes[outcome]++
		mu.Unlock()
	}
	work := make(chan int)
	go func() {
		defer close(work)
		for i := range cfg.Transfers {
			select {
			case work <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	for n := range cfg.Clients {
		r := rand.New(rand.NewPCG(cfg.Seed, uint64(n)))
		wg.Go(func() {
			for range work {
				count(transferOnce(ctx, c, cfg, r))
			}
		})
	}
	wg.Wait()
	rep.Seconds = time.Since(start).Seconds()
	return rep, ctx.Err()
}

// transferOnce moves 1 to 100 cents between two random accounts, in a
// random direction, holding both accounts' leases, and says how it went.
func transferOnce(ctx context.Context, c *client.Client, cfg config, r *rand.Rand) string {
	i := 1 + r.IntN(cfg.Accounts)
	j := 1 + (i+r.IntN(cfg.Accounts-1))%cfg.Accounts // any other account
	from, to := fmt.Sprintf("acct-%d", i), fmt.Sprintf("acct-%d", j)
	set, err := c.AcquireAll(ctx, []string{"account/" + from, "account/" + to}, client.AcquireOptions{TTL: cfg.TTL, Wait: cfg.Wait})
	if err != nil {
		return outcome(err)
	}
	defer set.Release(context.WithoutCancel(ctx))
	_, err = set.Write(set.Context(), "transfer",
		map[string]string{"from": "account/" + from, "to": "account/" + to},
		map[string]any{"from": from, "to": to, "amount_cents": 1 + r.IntN(100)})
	return outcome(err)
}

// outcome names an error by its problem kind: "ok" for none.
func outcome(err error) string {
	var p *client.ProblemError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &p):
		return p.Kind()
	}
	return "error: " + err.Error()
}

// failures counts the outcomes that are neither applied nor refused for
// want of money: a deadlock, a stale token, an unreachable gateway.
func (r *report) failures() int {
	n := 0
	for k, v := range r.Outcomes {
		if k != "ok" && k != "precondition-failed" {
			n += v
		}
	}
	return n
}

func (r *report) print(w io.Writer) {
	keys := make([]string, 0, len(r.Outcomes))
	for k := range r.Outcomes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(w, "%.1f s:", r.Seconds)
	for _, k := range keys {
		fmt.Fprintf(w, " %s %d", k, r.Outcomes[k])
	}
	fmt.Fprintln(w)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
