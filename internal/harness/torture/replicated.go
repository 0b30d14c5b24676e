package torture

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/fencegw/fencegw/internal/devserver/pgcluster"
)

// walDelay holds each chunk of WAL on its way to an asynchronous standby
// (--async-standby): the standby falls behind what the primary
// acknowledges, as one does across a slow link, so that a failover loses
// acknowledged commits often enough for the control to show it.
const walDelay = 300 * time.Millisecond

// replicated is the run's PostgreSQL for --failover: a primary and a
// streaming standby on two fixed ports, whose roles swap at each
// failover; the gateways and workers reach whichever accepts writes
// through one multi-host URL naming both ports.
type replicated struct {
	sync  bool
	ports [2]int
	// wal carries the asynchronous standby's replication connection, and
	// holds it back (nil for a synchronous standby).
	wal *slowProxy
	// stale, with an asynchronous standby, writes across each failover as
	// two holders of one resource (twoholders.go).
	stale *twoHolders
	// promoted, if set, is called with the new primary's URL once it
	// was promoted, before anything writes there on purpose.
	promoted func(ctx context.Context, primaryURL string)

	// ops: one failover or restart at a time.
	ops sync.Mutex

	mu       sync.Mutex
	primary  *pgcluster.Cluster
	standby  *pgcluster.Cluster
	standbys int // made so far, for their names
}

// startReplicated starts the primary; startStandby, once the run's schema
// is in place, its first standby (a standby that is behind from its first
// moment would lose the schema itself, not only writes).
func startReplicated(ctx context.Context, synchronous bool) (_ *replicated, err error) {
	r := &replicated{sync: synchronous}
	for i := range r.ports {
		if r.ports[i], err = pgcluster.FreePort(); err != nil {
			return nil, err
		}
	}
	if r.primary, err = pgcluster.Start(ctx, pgcluster.Options{Port: r.ports[0]}); err != nil {
		return nil, err
	}
	if !synchronous {
		if r.wal, err = startProxy(r.primary.Address()); err != nil {
			_ = r.primary.Stop()
			return nil, err
		}
		r.wal.setDelay(walDelay)
	}
	return r, nil
}

// url names both servers: clients reach the one that accepts writes.
func (r *replicated) url() string {
	hosts := ""
	for i, p := range r.ports {
		if i > 0 {
			hosts += ","
		}
		hosts += net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return "postgres://postgres@" + hosts + "/postgres?sslmode=disable&target_session_attrs=read-write"
}

// primaryURL is the current primary's own URL, for the checker.
func (r *replicated) primaryURL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.primary.URL()
}

// startStandby makes a standby of the primary on the port the primary
// does not use.
func (r *replicated) startStandby(ctx context.Context) error {
	port := r.ports[0]
	if r.primary.Port() == port {
		port = r.ports[1]
	}
	r.standbys++
	opts := pgcluster.StandbyOptions{Name: fmt.Sprintf("standby_%d", r.standbys), Synchronous: r.sync, Port: port}
	if r.wal != nil {
		r.wal.retarget(r.primary.Address())
		opts.Settings = map[string]string{"primary_conninfo": "host=127.0.0.1 port=" + strconv.Itoa(r.wal.port()) + " user=postgres"}
	}
	standby, err := r.primary.StartStandby(ctx, opts)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.standby = standby
	r.mu.Unlock()
	return nil
}

// failover does what a failover manager does when the primary's machine
// is lost: SIGKILL the primary, promote the standby, and (the old primary
// not reused) make a new standby of the new primary on the old one's port.
// It returns once a standby follows the new primary again, synchronously
// if the run's is.
func (r *replicated) failover(ctx context.Context) error {
	r.ops.Lock()
	defer r.ops.Unlock()
	r.mu.Lock()
	old := r.primary
	r.mu.Unlock()
	if r.wal != nil {
		// The control's interleaving, forced: the standby receives
		// nothing from here on, and the primary is killed only once it
		// has committed (and so acknowledged) a write more.
		r.wal.hold()
		if r.stale != nil {
			r.stale.beforeLoss(ctx)
		}
		waitForCommit(ctx, old.URL(), 5*time.Second)
	}
	old.Kill()
	if r.wal != nil {
		r.wal.drop() // the WAL still held back dies with the primary
	}
	return r.promote(ctx, old)
}

// outageFailover is a standby outage followed by a failover: the standby
// is halted, so that every COMMIT on the primary waits for it; outage
// runs meanwhile (it cancels and terminates those waits, whose
// transactions are then committed on the primary alone); then the
// primary is killed before the standby is back, and the standby, started
// again with what it had, is promoted. What was committed on the primary
// alone is lost, as it is when the standby's machine comes back after
// the primary's is lost.
func (r *replicated) outageFailover(ctx context.Context, outage func(context.Context)) error {
	r.ops.Lock()
	defer r.ops.Unlock()
	r.mu.Lock()
	old, next := r.primary, r.standby
	r.mu.Unlock()
	if err := next.Halt(); err != nil {
		return fmt.Errorf("halt the standby: %w", err)
	}
	outage(ctx)
	old.Kill()
	if err := next.Resume(ctx); err != nil {
		return fmt.Errorf("start the standby again: %w", err)
	}
	return r.promote(ctx, old)
}

// promote promotes the standby once old, the primary, was killed, and
// makes a new standby.
func (r *replicated) promote(ctx context.Context, old *pgcluster.Cluster) error {
	r.mu.Lock()
	next := r.standby
	r.mu.Unlock()
	if err := next.Promote(ctx); err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	r.mu.Lock()
	r.primary, r.standby = next, nil
	r.mu.Unlock()
	_ = old.Stop() // its files
	if r.promoted != nil {
		r.promoted(ctx, next.URL())
	}
	if r.stale != nil {
		_ = r.stale.afterLoss(ctx)
	}
	if err := r.startStandby(ctx); err != nil {
		return fmt.Errorf("new standby: %w", err)
	}
	return nil
}

// restartPrimary restarts the primary in place (fast shutdown, the same
// data and port): its synchronous standby reconnects, and commits wait
// for it meanwhile. False, doing nothing, while a failover is under way.
func (r *replicated) restartPrimary(ctx context.Context) (bool, error) {
	if !r.ops.TryLock() {
		return false, nil
	}
	defer r.ops.Unlock()
	r.mu.Lock()
	p := r.primary
	r.mu.Unlock()
	return true, p.Restart(ctx)
}

func (r *replicated) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.standby != nil {
		_ = r.standby.Stop()
	}
	if r.primary != nil {
		_ = r.primary.Stop()
	}
	if r.wal != nil {
		r.wal.close()
	}
}
