package torture

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/pause"
)

// pickGateway takes a gateway no other fault has, at random, and its
// index; nil if all are taken.
func (n *nemesis) pickGateway() (*gatewayProc, int) {
	start := n.rnd.IntN(len(n.gateways))
	for k := range n.gateways {
		i := (start + k) % len(n.gateways)
		if g := n.gateways[i]; g.busy.CompareAndSwap(false, true) {
			return g, i
		}
	}
	return nil, -1
}

// crashGateway SIGKILLs a gateway mid-traffic and starts it again
// (restart: until it is ready).
func (n *nemesis) crashGateway(ctx context.Context) bool {
	g, _ := n.pickGateway()
	if g == nil {
		return false
	}
	g.kill()
	n.count("kill-gateway")
	// In the background: a gateway that takes long to start again must
	// not hold up the other faults. It stays taken (busy) meanwhile.
	n.wg.Go(func() {
		defer g.busy.Store(false)
		sleep(ctx, 200*time.Millisecond)
		g.restart(ctx, n.log)
	})
	return true
}

// pauseGateway freezes a gateway (SIGSTOP, every thread) for two to three
// TTLs, in the middle of a transaction if it has one within catchFor: a
// gateway stopped between its fence check and its commit, holding the
// fence row's lock, while its clients' leases expire. When it resumes,
// its commit must still be right: no successor wrote meanwhile (the
// lock), and its writes were checked against the fence inside the
// transaction. pause-gateway-in-transaction counts the freezes that
// caught one open.
func (n *nemesis) pauseGateway(ctx context.Context) bool {
	g, i := n.pickGateway()
	if g == nil {
		return false
	}
	pid, ok := g.pid()
	if !ok {
		g.busy.Store(false)
		return false
	}
	open := n.catchTransaction(ctx, g, n.links[i])
	if err := pause.Stop(pid); err != nil {
		n.log.Error("freezing a gateway failed", "error", err)
		open.release()
		_ = pause.Resume(pid)
		g.busy.Store(false)
		return false
	}
	n.count("pause-gateway")
	if open.stillOpen() {
		n.count("pause-gateway-in-transaction")
	}
	d := n.ttls(2, 3)
	n.wg.Go(func() {
		defer g.busy.Store(false)
		sleep(ctx, d)
		open.release()
		_ = pause.Resume(pid)
	})
	return true
}

// catchFor bounds how long pauseGateway waits for a transaction to catch
// open: long enough for a gateway of the CI profile to take a write.
const catchFor = 2 * time.Second

// openTransaction is a transaction of a gateway's that catchTransaction
// found open, and the gateway's links it holds to keep it open.
type openTransaction struct {
	conn    *pgx.Conn // the nemesis's own, straight to PostgreSQL; nil: none
	ctx     context.Context
	backend int       // the session's PostgreSQL pid; 0: none found
	xact    time.Time // when its transaction began
	held    []*slowProxy
	done    func() // lets go of what it holds
}

// catchTransaction looks, for up to catchFor, for a transaction of g's
// open in PostgreSQL. Its transactions last milliseconds, so it holds
// back PostgreSQL's answers on l, g's links (unless a partition has
// them): the next transaction g begins meanwhile stays open, g
// waiting for an answer that does not come, and the freeze finds it so.
// Found, the answers stay held until release, after the freeze.
func (n *nemesis) catchTransaction(ctx context.Context, g *gatewayProc, l *links) *openTransaction {
	lctx, cancel := context.WithTimeout(ctx, catchFor+time.Second) // PostgreSQL away: freeze it wherever it is
	o := &openTransaction{ctx: lctx, done: cancel}
	conn, err := pgx.Connect(lctx, n.dbURL)
	if err != nil {
		return o
	}
	o.conn = conn
	holding := n.partitionBusy.CompareAndSwap(false, true)
	if holding {
		for _, p := range l.pg {
			p.holdDirections(toClient)
		}
		o.held = l.pg
		o.done = func() { cancel(); n.partitionBusy.Store(false) }
	}
	for deadline := time.Now().Add(catchFor); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		err := conn.QueryRow(lctx, `SELECT pid, xact_start FROM pg_stat_activity
			WHERE application_name = $1 AND xact_start IS NOT NULL LIMIT 1`, g.name).Scan(&o.backend, &o.xact)
		if err == nil || !errors.Is(err, pgx.ErrNoRows) {
			break // found, or PostgreSQL away
		}
	}
	if o.backend == 0 && holding {
		o.release() // nothing to keep open: the freeze comes wherever g is
		o.done = func() {}
	}
	return o
}

// stillOpen reports whether the transaction found is open yet.
func (o *openTransaction) stillOpen() bool {
	if o.conn == nil || o.backend == 0 {
		return false
	}
	var open bool
	err := o.conn.QueryRow(o.ctx, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1 AND xact_start = $2)", o.backend, o.xact).Scan(&open)
	return err == nil && open
}

// release closes the nemesis's connection and lets the links go: the held
// statement reaches PostgreSQL, its answer the gateway.
func (o *openTransaction) release() {
	if o.conn != nil {
		_ = o.conn.Close(context.Background())
		o.conn = nil
	}
	for _, p := range o.held {
		p.release()
	}
	o.held = nil
	o.done()
}
