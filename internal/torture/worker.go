package torture

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/torture/check"
)

// WorkerMain is one worker process (`fencegw torture-worker`): until its
// deadline it takes a lease on a random resource through a random gateway,
// spends a random part of the TTL in its "critical section", then sends
// one write with its token through a random gateway and records what
// happened. It writes with Client.Write, not Lease.Write: the point is to
// send the late write a paused holder would send, and see the fence refuse
// it.
func WorkerMain(args []string) int {
	fs := flag.NewFlagSet("torture-worker", flag.ContinueOnError)
	gateways := fs.String("gateways", "", "comma-separated gateway URLs")
	resources := fs.Int("resources", 2, "resources res/r0..")
	ttl := fs.Duration("ttl", time.Second, "lease TTL")
	until := fs.String("until", "", "stop at this RFC 3339 time")
	stopFile := fs.String("stop-file", "", "stop, between rounds, once this file exists")
	history := fs.String("history", "", "history file (JSON lines)")
	workerID := fs.Int("worker", 0, "worker number")
	seed := fs.Int64("seed", 1, "random seed")
	burst := fs.Int("burst", 1, "up to this many concurrent writes per lease")
	transfers := fs.Int("transfers", 0, "percentage of rounds that transfer between two resources")
	dbURL := fs.String("database-url", "", "PostgreSQL, for the read step of the critical section")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	deadline, err := time.Parse(time.RFC3339Nano, *until)
	if err != nil || *gateways == "" || *history == "" {
		fmt.Fprintln(os.Stderr, "torture-worker: needs --gateways, --history and --until")
		return 2
	}
	f, err := os.OpenFile(*history, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture-worker:", err)
		return 1
	}
	defer f.Close()
	w := &worker{
		id: *workerID, rnd: rand.New(rand.NewPCG(uint64(*seed), uint64(*workerID))), ttl: *ttl,
		resources: *resources, history: json.NewEncoder(f), burst: max(*burst, 1), transfers: *transfers,
	}
	for _, g := range strings.Split(*gateways, ",") {
		w.clients = append(w.clients, client.New(g))
	}
	if *dbURL != "" {
		if w.db, err = pgxpool.New(context.Background(), *dbURL); err != nil {
			fmt.Fprintln(os.Stderr, "torture-worker:", err)
			return 1
		}
		defer w.db.Close()
	}
	for n := 0; time.Now().Before(deadline) && !exists(*stopFile); n++ {
		w.round(deadline, n)
	}
	return 0
}

type worker struct {
	id        int
	rnd       *rand.Rand
	ttl       time.Duration
	resources int
	clients   []*client.Client
	burst     int
	transfers int           // percentage of rounds that are transfers
	db        *pgxpool.Pool // reads only: every write goes through a gateway

	mu      sync.Mutex // guards history across a burst
	history *json.Encoder
}

func (w *worker) pick() *client.Client { return w.clients[w.rnd.IntN(len(w.clients))] }

func (w *worker) round(deadline time.Time, n int) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if w.resources > 1 && w.rnd.IntN(100) < w.transfers {
		w.transferRound(ctx, n)
		return
	}
	r := fmt.Sprintf("r%d", w.rnd.IntN(w.resources))
	lease, err := w.pick().Acquire(ctx, "res/"+r, client.AcquireOptions{TTL: w.ttl, Wait: 3 * w.ttl})
	if err != nil {
		time.Sleep(50 * time.Millisecond)
		return
	}
	defer lease.Release(context.Background())

	// The critical section, in steps: think, read the state, think again.
	// A pause anywhere here (GC, SIGSTOP) outlives the lease.
	w.step()
	w.readState(ctx, "res/"+r)
	w.step()

	// Several writes at once under one lease: what coalescing batches.
	var wg sync.WaitGroup
	for k := range 1 + w.rnd.IntN(w.burst) {
		intent := fmt.Sprintf("w%d-%d-%d", w.id, n, k)
		c := w.pick()
		wg.Go(func() { w.write(c, lease.Token(), r, intent) })
	}
	wg.Wait()
}

// step is a step of the critical section: thinking for part of the TTL.
func (w *worker) step() { time.Sleep(time.Duration(float64(w.ttl) * (0.1 + 0.3*w.rnd.Float64()))) }

// transferRound takes the leases of two resources, in canonical order,
// and moves money between them, in either direction, with one write fenced
// on both. Each role is its own intent (X:from, X:to) on its resource, as
// the log has a row per role.
func (w *worker) transferRound(ctx context.Context, n int) {
	i := w.rnd.IntN(w.resources)
	j := (i + 1 + w.rnd.IntN(w.resources-1)) % w.resources
	from, to := fmt.Sprintf("r%d", i), fmt.Sprintf("r%d", j)
	set, err := w.pick().AcquireAll(ctx, []string{"res/" + from, "res/" + to}, client.AcquireOptions{TTL: w.ttl, Wait: 3 * w.ttl})
	if err != nil {
		time.Sleep(50 * time.Millisecond)
		return
	}
	defer set.Release(context.Background())
	w.step()
	w.readState(ctx, "res/"+from)
	w.step()

	intent := fmt.Sprintf("w%d-%d-t", w.id, n)
	fromToken, toToken := set.Lease("res/"+from).Token(), set.Lease("res/"+to).Token()
	roles := [2]check.Event{
		{Worker: w.id, Intent: intent + ":from", Resource: "res/" + from, Token: client.Unsigned(fromToken)},
		{Worker: w.id, Intent: intent + ":to", Resource: "res/" + to, Token: client.Unsigned(toToken)},
	}
	for _, ev := range roles {
		w.record(ev, "invoke", "")
	}
	wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	args := map[string]any{"from": from, "to": to, "intent": intent, "worker": w.id, "amount": 1 + w.rnd.IntN(100)}
	_, err = w.pick().Write(wctx, client.RoleTokens(map[string]string{"from": fromToken, "to": toToken}),
		"transfer", args, client.WithIdempotencyKey(intent))
	typ, detail := outcome(err)
	var stale *client.StaleTokenError
	for k, ev := range roles {
		d := detail
		if errors.As(err, &stale) && stale.Role != [2]string{"from", "to"}[k] {
			// Refused for the other role's fence: this one's says nothing.
			d = "stale-token of the other role"
		}
		w.record(ev, typ, d)
	}
}

func (w *worker) write(c *client.Client, token, r, intent string) {
	ev := check.Event{Worker: w.id, Intent: intent, Resource: "res/" + r, Token: client.Unsigned(token)}
	w.record(ev, "invoke", "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.Write(ctx, token, "append", map[string]any{"r": r, "intent": intent, "worker": w.id}, client.WithIdempotencyKey(intent))
	typ, detail := outcome(err)
	w.record(ev, typ, detail)
}

// readState reads what the holder would base its write on. Its result is
// not checked: the point is the read-then-write shape of a real critical
// section, and a read that may fail while PostgreSQL restarts.
func (w *worker) readState(ctx context.Context, resource string) {
	if w.db == nil {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var n int64
	_ = w.db.QueryRow(rctx, "SELECT count(*) FROM torture.log WHERE resource = $1", resource).Scan(&n)
}

// outcome sorts a write's answer: "ok", "fail" when the gateway says it
// applied nothing (a 4xx problem, or a 503 with outcome not-applied —
// which the checker holds it to), "info" when it may have (timeouts,
// broken connections, outcome unknown).
func outcome(err error) (string, string) {
	var p *client.ProblemError
	switch {
	case err == nil:
		return "ok", ""
	case errors.As(err, &p) && (p.Status >= 400 && p.Status < 500 || p.Outcome == "not-applied"):
		return "fail", p.Kind()
	}
	return "info", err.Error()
}

func (w *worker) record(ev check.Event, typ, detail string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ev.Time, ev.Type, ev.Detail = time.Now(), typ, detail
	if err := w.history.Encode(ev); err != nil {
		fmt.Fprintln(os.Stderr, "torture-worker: history:", err)
		os.Exit(1)
	}
}

// exists reports whether the file at path exists; an empty path never does.
func exists(path string) bool {
	if path == "" {
		return false
	}
	_, err := os.Stat(path)
	return err == nil
}
