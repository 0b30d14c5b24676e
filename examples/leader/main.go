// Command leader is a candidate in a leader election through fencegw:
// candidates take a lease on leader/<group>, the leader keeps it alive and
// writes every --every with the lease's token, and the others follow,
// printing who leads, and campaign again when the lease goes.
//
//	go run ./examples/leader --gateway http://127.0.0.1:8080 --group g1 --name a
//	go run ./examples/leader --group g1 --observe
//
// It needs a gateway serving examples/leader/policy.yaml, and prints one
// event a line: following X, leading with token T, wrote n, stale: stepped
// down. --observe only follows. With FENCEGW_HOLD_DIR set, the leader
// waits before each write until told to go on, so that it can be frozen
// exactly between its lease check and its write (examples/README.md).
//
// Election is not a lock. A leader that lost its lease can still be
// running, with its connections open and its timers firing, and write;
// stepping down when it notices only makes that rarer. What refuses its
// writes is the fence on the storage side, which accepts tokens, never "I
// am the leader".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/fencegw/fencegw/client"
)

// config is what a candidate does.
type config struct {
	Gateway string
	Bearer  string
	Group   string // the election: resource leader/<Group>
	Name    string // who this candidate is; its lease's value
	TTL     time.Duration
	Every   time.Duration // between the leader's writes
	Wait    time.Duration // how long one lease request waits before queueing again
	Poll    time.Duration // before watching again after a refused watch
	Observe bool          // follow only, never campaign
}

func main() {
	host, _ := os.Hostname()
	var cfg config
	flag.StringVar(&cfg.Gateway, "gateway", envOr("FENCEGW_URL", "http://127.0.0.1:8080"), "gateway base URL (FENCEGW_URL)")
	flag.StringVar(&cfg.Bearer, "bearer", os.Getenv("FENCEGW_BEARER_TOKEN"), "bearer token, if the policy declares clients (FENCEGW_BEARER_TOKEN)")
	flag.StringVar(&cfg.Group, "group", "g1", "the group to lead: lease on leader/GROUP")
	flag.StringVar(&cfg.Name, "name", fmt.Sprintf("%s-%d", host, os.Getpid()), "this candidate's name, shown to followers")
	flag.DurationVar(&cfg.TTL, "ttl", 5*time.Second, "lease TTL: how long a silent leader leads on")
	flag.DurationVar(&cfg.Every, "every", time.Second, "how often the leader writes")
	flag.DurationVar(&cfg.Wait, "wait", 5*time.Minute, "how long one lease request waits in line (at most 5m)")
	flag.DurationVar(&cfg.Poll, "poll", 500*time.Millisecond, "how long a follower waits before asking again for a watch the gateway refused")
	flag.BoolVar(&cfg.Observe, "observe", false, "only follow: print who leads, never campaign")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ev := newEvents(os.Stdout)
	var err error
	if cfg.Observe {
		err = observe(ctx, cfg, ev)
	} else {
		err = run(ctx, cfg, ev)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "leader:", err)
		os.Exit(2)
	}
}

// check refuses a configuration before anything is sent.
func (cfg config) check() error {
	switch {
	case cfg.Group == "":
		return errors.New("--group is empty")
	case cfg.Name == "" && !cfg.Observe:
		return errors.New("--name is empty")
	case cfg.TTL < time.Second || cfg.Every <= 0 || cfg.Wait <= 0 || cfg.Poll <= 0:
		return errors.New("want --ttl of at least 1s, and --every, --wait and --poll above 0")
	}
	return nil
}

// resource is the lock and the fence of the group's election.
func (cfg config) resource() string { return "leader/" + cfg.Group }

func newClient(cfg config) *client.Client {
	return client.New(cfg.Gateway, client.WithBearerToken(cfg.Bearer))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// events prints what a candidate sees, one event a line, stamped with the
// time of day: the candidates of one election run side by side, and their
// lines are read together.
type events struct {
	mu sync.Mutex // the follower goroutine and the candidate's loop both print
	w  io.Writer
}

func newEvents(w io.Writer) *events { return &events{w: w} }

func (e *events) printf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fmt.Fprintf(e.w, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}
