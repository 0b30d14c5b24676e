package gateway_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// connFaults cuts, when armed, a replica's next connection that sends a
// batch (recognised by the Sync that ends it): right after the batch went
// out (the request reached PostgreSQL, its answer never comes back: a
// COMMIT among it commits, unbeknown to the gateway), or instead of
// sending it (a COMMIT among it never arrives: the transaction rolls back).
type connFaults struct {
	mu  sync.Mutex
	cut cutWhen
}

type cutWhen int

const (
	noCut cutWhen = iota
	cutAfterSending
	cutBeforeSending
	// cutBeforeCommit cuts, instead of sending it, the next batch that
	// carries a COMMIT: an explicit transaction's answers must not outlive
	// its lost COMMIT.
	cutBeforeCommit
)

func (f *connFaults) arm(when cutWhen) {
	f.mu.Lock()
	f.cut = when
	f.mu.Unlock()
}

// take disarms f and returns what it was armed for, if b is a batch it
// is armed for.
func (f *connFaults) take(b []byte) cutWhen {
	if !bytes.HasSuffix(b, syncMessage) {
		return noCut
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	when := f.cut
	if when == cutBeforeCommit && !bytes.Contains(b, []byte("COMMIT")) {
		return noCut
	}
	f.cut = noCut
	return when
}

type faultyConn struct {
	net.Conn
	f *connFaults
}

func (c *faultyConn) Write(b []byte) (int, error) {
	switch c.f.take(b) {
	case cutBeforeSending, cutBeforeCommit:
		c.Conn.Close()
		return 0, net.ErrClosed
	case cutAfterSending:
		n, err := c.Conn.Write(b)
		c.Conn.Close()
		return n, err
	}
	return c.Conn.Write(b)
}

// faultEvery is how many finished operations apart the faults come.
const faultEvery = 3

// injectFaults starts the nemesis: after every faultEvery finished
// operations, one fault, chosen by the run's seed: a replica's connection
// cut after or before its next batch, or before its next COMMIT, a replica's backend terminated by
// PostgreSQL (pg_terminate_backend), or a fence row held by another
// transaction past the replicas' lock_timeout. (Serialization failures
// and deadlocks are injected by the writes themselves: amounts 13 and 17.)
// It returns what stops it, and waits for the fence rows it holds to be
// let go.
func (r *invariantRun) injectFaults() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var holds sync.WaitGroup
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(r.seed, 1<<32))
		for finished := 1; ; finished++ {
			select {
			case <-ctx.Done():
				return
			case <-r.finished:
			}
			if finished%faultEvery != 0 {
				continue
			}
			switch n := rng.IntN(5); n {
			case 0:
				r.faults[rng.IntN(2)].arm(cutAfterSending)
			case 1:
				r.faults[rng.IntN(2)].arm(cutBeforeSending)
			case 2:
				r.faults[rng.IntN(2)].arm(cutBeforeCommit)
			case 3:
				r.terminateABackend(ctx)
			case 4:
				resource := []string{"account/a1", "account/a2", "account/a3", "account/a4", "slot/s1", "slot/s2"}[rng.IntN(6)]
				hold := invariantLockTimeout/2 + time.Duration(rng.Int64N(int64(2*invariantLockTimeout)))
				holds.Go(func() { r.holdFenceRow(ctx, resource, hold) })
			}
		}
	}()
	return func() {
		cancel()
		<-done
		holds.Wait()
		for _, f := range r.faults {
			f.arm(noCut)
		}
	}
}

// terminateABackend ends one of the replicas' sessions, whatever it is
// doing, as an operator or the OOM killer would.
func (r *invariantRun) terminateABackend(ctx context.Context) {
	_, _ = r.h.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name IN ('inv-a', 'inv-b')
		ORDER BY random() LIMIT 1`)
}

// holdFenceRow locks resource's fence row, if it exists, from a
// transaction of its own for d (or until ctx ends), as an operator's open
// transaction would.
func (r *invariantRun) holdFenceRow(ctx context.Context, resource string, d time.Duration) {
	tx, err := r.h.pool.Begin(ctx)
	if err != nil {
		return
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, "SELECT 1 FROM fencegw.fences WHERE resource = $1 FOR UPDATE", resource); err != nil {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
