package torture

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/clockskew"
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
	strict := fs.Int("strict", 0, "percentage of rounds on the strict resources strict/r0..")
	semaphores := fs.Int("semaphores", 0, "percentage of rounds on a permit of the semaphores sem/r0..")
	clockPath := fs.String("clock", "", "the clock page the nemesis steps this worker's clocks with (clockpage.go)")
	wirePct := fs.Int("wire", 0, "percentage of rounds on res and strict whose write goes through the SQL front")
	fronts := fs.String("fronts", "", "comma-separated addresses of the gateways' SQL fronts")
	frontDB := fs.String("front-db", "", "the database the SQL fronts serve")
	bearerFile := fs.String("bearer-file", "", "the file holding the client's bearer key, for HTTP and the SQL front")
	unfenced := fs.Bool("unfenced", false, "the control: write through the SQL front without naming the fence")
	churn := fs.Int("churn", 0, "a lease-churn worker over churn/r0..r(N-1) (churn.go); 0: a worker of res, strict and sem")
	grants := fs.String("grants", "", "with --churn: the log of the leases granted (JSON lines)")
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
		resources: *resources, history: json.NewEncoder(f), burst: max(*burst, 1), transfers: *transfers, strict: *strict, semaphores: *semaphores,
		clock: client.SystemClock, churn: *churn,
	}
	if *grants != "" {
		if w.grants, err = newGrantLog(*grants, *workerID); err != nil {
			fmt.Fprintln(os.Stderr, "torture-worker:", err)
			return 1
		}
		defer w.grants.close()
	}
	if *clockPath != "" {
		if err := clockskew.Check(); err != nil {
			fmt.Fprintln(os.Stderr, "torture-worker:", err)
			return 1
		}
		if w.page, err = mapClockPage(*clockPath); err != nil {
			fmt.Fprintln(os.Stderr, "torture-worker:", err)
			return 1
		}
		defer w.page.close()
		w.clock = pageClock{w.page}
	}
	// Every client's answers pass the recording transport: a key's
	// answers are held to agree byte for byte.
	w.keepalives = &keepaliveDrop{base: http.DefaultTransport.(*http.Transport).Clone(), ids: map[string]bool{}}
	hc := &http.Client{Transport: recordingTransport{base: w.keepalives}}
	opts := []client.Option{client.WithClock(w.clock), client.WithHTTPClient(hc)}
	if *bearerFile != "" {
		opts = append(opts, client.WithBearerFile(*bearerFile))
	}
	for _, g := range strings.Split(*gateways, ",") {
		w.clients = append(w.clients, client.New(g, opts...))
	}
	if *wirePct > 0 {
		if w.front, err = newWireWriter(*fronts, *frontDB, *bearerFile, *wirePct, *unfenced); err != nil {
			fmt.Fprintln(os.Stderr, "torture-worker:", err)
			return 1
		}
	}
	if *dbURL != "" {
		if w.db, err = pgxpool.New(context.Background(), *dbURL); err != nil {
			fmt.Fprintln(os.Stderr, "torture-worker:", err)
			return 1
		}
		defer w.db.Close()
	}
	round := w.round
	if w.churn > 0 {
		round = w.churnRound
	}
	for n := 0; time.Now().Before(deadline) && !exists(*stopFile); n++ {
		round(deadline, n)
	}
	return 0
}

type worker struct {
	id         int
	rnd        *rand.Rand
	ttl        time.Duration
	resources  int
	clients    []*client.Client
	burst      int
	transfers  int            // percentage of rounds that are transfers
	strict     int            // percentage of rounds on strict resources
	semaphores int            // percentage of rounds on a semaphore's permit
	db         *pgxpool.Pool  // reads only: every write goes through a gateway
	clock      client.Clock   // the leases' clock: pageClock under clock faults
	page       *clockPage     // nil: no clock faults
	front      *wireWriter    // nil: every write over HTTP
	churn      int            // a lease-churn worker's resources churn/r0..; 0: not one
	grants     *grantLog      // a lease-churn worker's; nil: none kept
	keepalives *keepaliveDrop // its clients' transport: drops the keepalives of leases it abandons

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
	family, permits := "res", 0
	switch roll := w.rnd.IntN(100); {
	case roll < w.strict:
		family = "strict"
	case roll < w.strict+w.semaphores:
		family, permits = "sem", semPermits
	}
	op := appendOp(family)
	r := fmt.Sprintf("r%d", w.rnd.IntN(w.resources))
	lag := w.lag()
	lease, err := w.pick().Acquire(ctx, family+"/"+r, client.AcquireOptions{TTL: w.ttl, Wait: 3 * w.ttl, Permits: permits})
	if err != nil {
		time.Sleep(50 * time.Millisecond)
		return
	}
	defer lease.Release(context.Background())

	// The critical section, in steps: think, read the state, think again.
	// A pause anywhere here (GC, SIGSTOP, a suspend) outlives the lease.
	w.step()
	w.readState(ctx, lease.Resource())
	w.step()
	w.suspendIfAsked()

	// Several writes at once under one lease: what coalescing batches.
	// Each records what the client says of the lease, and is sent anyway.
	view := w.leaseView(lease, lag)
	if w.front != nil && permits == 0 && w.rnd.IntN(100) < w.front.pct {
		w.wireWrite(lease.Token(), lease.Resource(), fmt.Sprintf("w%d-%d-0", w.id, n), view)
		return
	}
	var wg sync.WaitGroup
	for k := range 1 + w.rnd.IntN(w.burst) {
		intent := fmt.Sprintf("w%d-%d-%d", w.id, n, k)
		p := w.plan(w.pick())
		wg.Go(func() { w.write(p, op, lease.Token(), lease.Resource(), r, intent, view) })
	}
	wg.Wait()
}

// step is a step of the critical section: thinking for part of the TTL,
// a millisecond or so of it on the CPU (hashing thinkBytes), so that a
// worker at a cgroup's CPU limit stalls here, as real work would.
func (w *worker) step() {
	sha256.Sum256(thinkBytes[:])
	time.Sleep(time.Duration(float64(w.ttl) * (0.1 + 0.3*w.rnd.Float64())))
}

// thinkBytes is what a step hashes: about a millisecond of CPU.
var thinkBytes [1 << 20]byte

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
