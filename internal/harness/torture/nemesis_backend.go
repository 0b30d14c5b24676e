package torture

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// gatewaySessions picks the gateways' sessions out of pg_stat_activity.
const gatewaySessions = "application_name LIKE 'torture-gateway-%' AND pid <> pg_backend_pid()"

// What an operator, a job or PostgreSQL itself does to a session, as the
// nemesis's kinds of fault name them: the function it calls, and the
// sessions it calls it on (a condition on pg_stat_activity).
var backendSignals = map[string]struct{ fn, where string }{
	// A statement cancelled: its transaction fails, whatever it was.
	"cancel-backend": {"pg_cancel_backend", "state = 'active' AND wait_event IS DISTINCT FROM 'SyncRep'"},
	// A session ended in a statement or inside a transaction: its
	// connection is cut, a COMMIT on its way with it.
	"terminate-backend": {"pg_terminate_backend", "state IN ('active', 'idle in transaction')"},
	// A COMMIT's wait for the synchronous standby cancelled: PostgreSQL
	// answers it with a warning, committed on the primary only.
	"cancel-commit": {"pg_cancel_backend", "wait_event = 'SyncRep'"},
}

// signalBackend calls the function of kind on a gateway session in the
// state kind wants, the first found within catchFor, and counts kind if
// it reached one. One such fault at a time.
func (n *nemesis) signalBackend(ctx context.Context, kind string) bool {
	sig, ok := backendSignals[kind]
	if !ok || !n.backendBusy.CompareAndSwap(false, true) {
		return false
	}
	n.wg.Go(func() {
		defer n.backendBusy.Store(false)
		ctx, cancel := context.WithTimeout(ctx, catchFor+time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, n.dbURL)
		if err != nil {
			return
		}
		defer conn.Close(context.WithoutCancel(ctx))
		q := fmt.Sprintf("SELECT %s(pid) FROM pg_stat_activity WHERE %s AND %s LIMIT 1", sig.fn, gatewaySessions, sig.where)
		for deadline := time.Now().Add(catchFor); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			var done bool
			switch err := conn.QueryRow(ctx, q).Scan(&done); {
			case err == nil && done:
				n.count(kind)
				return
			case err != nil && !errors.Is(err, pgx.ErrNoRows):
				return // PostgreSQL away
			}
		}
	})
	return true
}

// roleTimeouts are the settings the nemesis shortens on the gateways'
// role, by the kind of fault.
var roleTimeouts = map[string]string{
	"statement-timeout":           "statement_timeout",
	"idle-in-transaction-timeout": "idle_in_transaction_session_timeout",
}

// roleTimeout sets a timeout of 2 to 20 ms on the gateways' role
// (ALTER ROLE … IN DATABASE … SET, which no replication connection
// reads), ends their idle sessions so that their pools reconnect with
// it, keeps it for one to three TTLs, and resets it, ending their idle
// sessions again. It counts once a gateway session that began after the
// setting was there. One at a time.
func (n *nemesis) roleTimeout(ctx context.Context, kind string) bool {
	setting, ok := roleTimeouts[kind]
	if !ok || !n.roleBusy.CompareAndSwap(false, true) {
		return false
	}
	value := time.Duration(2+n.rnd.IntN(19)) * time.Millisecond
	span := n.ttls(1, 3)
	n.wg.Go(func() {
		defer n.roleBusy.Store(false)
		role := pgx.Identifier{gatewayRole}.Sanitize()
		set := fmt.Sprintf("ALTER ROLE %s IN DATABASE postgres SET %s = '%dms'", role, setting, value.Milliseconds())
		start := time.Now()
		var at time.Time
		err := n.adminExec(ctx, func(ctx context.Context, conn *pgx.Conn) error {
			if _, err := conn.Exec(ctx, set); err != nil {
				return err
			}
			return conn.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&at)
		})
		if err != nil {
			return // PostgreSQL away: nothing was set
		}
		defer n.resetRoleTimeout(context.WithoutCancel(ctx), setting)
		n.endIdleGatewaySessions(ctx)
		if n.awaitSessionSince(ctx, at, span) {
			n.count(kind)
		}
		sleep(ctx, time.Until(start.Add(span)))
	})
	return true
}

// resetRoleTimeout resets setting on the gateways' role, trying for up to
// half a minute (a failover may be under way), and ends the gateways'
// idle sessions, which come back without it.
func (n *nemesis) resetRoleTimeout(ctx context.Context, setting string) {
	reset := fmt.Sprintf("ALTER ROLE %s IN DATABASE postgres RESET %s", pgx.Identifier{gatewayRole}.Sanitize(), setting)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		err := n.adminExec(ctx, func(ctx context.Context, conn *pgx.Conn) error { _, err := conn.Exec(ctx, reset); return err })
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			n.log.Error("resetting a timeout of the gateways' role failed", "setting", setting, "error", err)
			return
		}
	}
	n.endIdleGatewaySessions(ctx)
}

// endIdleGatewaySessions ends the gateways' idle sessions.
func (n *nemesis) endIdleGatewaySessions(ctx context.Context) {
	_ = n.adminExec(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "+gatewaySessions+" AND state = 'idle'")
		return err
	})
}

// awaitSessionSince waits up to d for a gateway session that began at or
// after at.
func (n *nemesis) awaitSessionSince(ctx context.Context, at time.Time, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var found bool
		err := n.adminExec(ctx, func(ctx context.Context, conn *pgx.Conn) error {
			return conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE "+gatewaySessions+" AND backend_start >= $1)", at).Scan(&found)
		})
		if err == nil && found {
			return true
		}
		sleep(ctx, 50*time.Millisecond)
	}
	return false
}

// adminExec runs f on a connection of the nemesis's own to the server
// that accepts writes, within a few seconds (f's ctx).
func (n *nemesis) adminExec(ctx context.Context, f func(context.Context, *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, n.dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return f(ctx, conn)
}

// standbyOutage runs while the synchronous standby is down before a
// failover (replicated.outageFailover): every COMMIT of the gateways
// waits for it, and the nemesis cancels those waits (cancel-syncrep:
// PostgreSQL answers the COMMIT with a warning, committed on the primary
// alone) or terminates their sessions (terminate-syncrep), for one to two
// TTLs and until it did so at least once. In the control that ignores
// commit warnings, the nemesis's own two holders write meanwhile
// (twoHolders.beforeLoss), and the outage lasts until the newer token's
// write was acknowledged: the failover then loses it. It counts
// standby-outage once a wait was cancelled or terminated.
func (n *nemesis) standbyOutage(ctx context.Context) {
	stale := make(chan struct{})
	if s := n.replicated.stale; s != nil {
		go func() { defer close(stale); s.beforeLoss(ctx) }()
	} else {
		close(stale)
	}
	// Not n.rnd: the nemesis's loop draws from it meanwhile.
	until, bound := time.Now().Add(3*n.cfg.TTL/2), time.Now().Add(outageFor)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}()
	signalled := 0
	for round := 0; time.Now().Before(bound); round++ {
		select {
		case <-stale:
			if signalled > 0 && !time.Now().Before(until) {
				n.count("standby-outage")
				return
			}
		default:
		}
		time.Sleep(10 * time.Millisecond)
		if conn == nil {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			c, err := pgx.Connect(cctx, n.dbURL)
			cancel()
			if err != nil {
				continue
			}
			conn = c
		}
		fn, kind := "pg_cancel_backend", "cancel-syncrep"
		if round%4 == 3 {
			fn, kind = "pg_terminate_backend", "terminate-syncrep"
		}
		var k int
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := conn.QueryRow(qctx, fmt.Sprintf("SELECT count(*) FILTER (WHERE %s(pid)) FROM pg_stat_activity WHERE %s AND wait_event = 'SyncRep'", fn, gatewaySessions)).Scan(&k)
		cancel()
		switch {
		case err != nil:
			_ = conn.Close(context.WithoutCancel(ctx))
			conn = nil
		case k > 0:
			n.add(kind, k)
			signalled += k
		}
	}
	<-stale
	if signalled > 0 {
		n.count("standby-outage")
	}
}

// outageFor bounds a standby outage: the control's write and its
// retries, each up to 5 s, and their cancellations.
const outageFor = 30 * time.Second
