package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/tokens"
)

// tokenResource is the lock whose lease lends each cell its token: a
// lock-only name of the bench policy (leases:), so no lock-delay applies.
const tokenResource = "bench/token"

// leaseTTL is short: the client keeps the lease alive while a cell runs.
const leaseTTL = 30 * time.Second

// Cell is one client count and distribution, measured on both paths.
type Cell struct {
	Clients      int  `json:"clients"`
	Dist         Dist `json:"dist"`
	PoolMaxConns int  `json:"pool_max_conns"`
	Direct       Path `json:"direct"`
	Gateway      Path `json:"gateway"`
	// Ratio is gateway throughput over direct throughput.
	Ratio float64 `json:"ratio"`
	// Pgbench is the yardstick (pgbench, the same fenced write as one
	// statement, a connection per client); nil when it did not run.
	Pgbench *Path `json:"pgbench,omitempty"`
	// PgbenchRatio is gateway throughput over pgbench's.
	PgbenchRatio float64 `json:"gateway_over_pgbench,omitempty"`
	// Ceiling is the batched ceiling (ceiling.go): pgbench running the
	// fenced statement grouped as the gateway grouped it; nil when
	// pgbench did not run.
	Ceiling *Ceiling `json:"ceiling,omitempty"`
	// CeilingRatio is gateway throughput over the ceiling's.
	CeilingRatio float64 `json:"gateway_over_ceiling,omitempty"`
	// Overhead is what the gateway adds to one client's write, the
	// paths taking turns; measured in 1-client cells only.
	Overhead *Overhead `json:"overhead,omitempty"`
	// Replicas are the gateway processes of the cell (--replicas), each
	// with its share of the gateway path's writes; Gateway is their
	// total.
	Replicas []ReplicaShare `json:"replicas,omitempty"`
	// Memory is the gateway's RSS around the cell's idle connections;
	// nil when none were asked and the gateway is this process.
	Memory *Memory `json:"memory,omitempty"`
	// Wrk is wrk's measurement of the same cell (--wrk); WrkRatio its
	// writes/s over the gateway path's.
	Wrk      *WrkPath `json:"wrk,omitempty"`
	WrkRatio float64  `json:"wrk_over_gateway,omitempty"`
}

// Valid reports whether both paths wrote and nothing failed, wrk's
// writes included: a cell with errors measured something other than the
// writes it claims.
func (c *Cell) Valid() bool {
	pgbenchOK := c.Pgbench == nil || (c.Pgbench.Writes > 0 && c.Pgbench.ErrorCount() == 0)
	overheadOK := c.Overhead == nil || (c.Overhead.PerPath > 0 && len(c.Overhead.Errors) == 0)
	// A ceiling that could not be measured says why (Ceiling.Error); the
	// gateway's figures, which it would only be compared with, stand.
	ceilingOK := c.Ceiling == nil || c.Ceiling.WritesPerSec > 0 || c.Ceiling.Error != ""
	return c.Direct.Writes > 0 && c.Gateway.Writes > 0 && c.Direct.ErrorCount() == 0 && c.Gateway.ErrorCount() == 0 && pgbenchOK && overheadOK && ceilingOK && c.Wrk.valid()
}

// runCell measures one cell. Both paths write with the token of one real
// lease taken through the gateway: monotonic fences accept it again and
// again, on every account. A token is good for the resource it was granted
// for only, so each account gets that lease's number signed for it, as
// the gateway would have granted it (signed with the keys in etcd).
// gatewayFirst alternates the order between cells so neither path always
// runs on the table the other one just churned.
func (e *env) runCell(ctx context.Context, n int, d Dist, gatewayFirst bool) (_ Cell, err error) {
	size := e.cfg.poolSize(n)
	cell := Cell{Clients: n, Dist: d, PoolMaxConns: size}
	t, err := e.startTarget(ctx, size)
	if err != nil {
		return cell, err
	}
	defer func() { err = errors.Join(err, t.close()) }()
	addrs, err := t.addrs()
	if err != nil {
		return cell, err
	}
	hc := newHTTPClient()
	defer hc.CloseIdleConnections()
	lease, err := client.New(t.urls[0], client.WithHTTPClient(hc)).Acquire(ctx, tokenResource, client.AcquireOptions{TTL: leaseTTL})
	if err != nil {
		return cell, fmt.Errorf("bench: lease for the cell's token: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err = errors.Join(err, lease.Release(rctx))
	}()
	tok, err := tokens.Parse(lease.Token())
	if err != nil {
		return cell, fmt.Errorf("bench: the gateway granted a malformed token: %w", err)
	}
	signed, err := e.signedTokens(ctx, tok)
	if err != nil {
		return cell, err
	}
	idle, mem, err := e.openIdleMeasured(ctx, t)
	if err != nil {
		return cell, err
	}
	defer idle.close()
	cell.Memory = mem

	direct := func() (err error) {
		cell.Direct, err = e.runDirect(ctx, n, d, size, tok)
		return err
	}
	groupSize := 1.0
	viaGateway := func() error {
		g, err := e.runGateway(ctx, t, hc, n, d, signed)
		cell.Gateway, cell.Replicas, groupSize = g.path, g.shares, g.groupSize
		return err
	}
	order := []func() error{direct, viaGateway}
	if gatewayFirst {
		order[0], order[1] = order[1], order[0]
	}
	for _, run := range order {
		if err := run(); err != nil {
			return cell, err
		}
		if err := ctx.Err(); err != nil {
			return cell, fmt.Errorf("bench: interrupted: %w", err)
		}
	}
	if e.cfg.Wrk {
		if cell.Wrk, err = e.runWrk(ctx, t.urls[0], n, d, signed); err != nil {
			return cell, err
		}
		if cell.Gateway.TxPerSec > 0 {
			cell.WrkRatio = cell.Wrk.WritesPerSec / cell.Gateway.TxPerSec
		}
	}
	if n == 1 {
		o, err := e.runOverhead(ctx, d, tok, signed, addrs[0])
		if err != nil {
			return cell, err
		}
		cell.Overhead = &o
	}
	cell.Memory.finish(t)
	if cell.Direct.TxPerSec > 0 {
		cell.Ratio = cell.Gateway.TxPerSec / cell.Direct.TxPerSec
	}
	if e.pgbench != "" {
		p, err := runPgbench(ctx, e.pgbench, libpqURL(e.cfg.DatabaseURL), n, d, tok, e.cfg.window())
		if err != nil {
			return cell, err
		}
		cell.Pgbench = &p
		if p.TxPerSec > 0 {
			cell.PgbenchRatio = cell.Gateway.TxPerSec / p.TxPerSec
		}
		if cell.Ceiling, err = e.runCeiling(ctx, d, tok, groupSize, ceilingConnections(e.cfg, len(t.urls), n, size), n); err != nil {
			return cell, err
		}
		if cell.Ceiling.WritesPerSec > 0 {
			cell.CeilingRatio = cell.Gateway.TxPerSec / cell.Ceiling.WritesPerSec
		}
	}
	return cell, nil
}

// signedTokens signs tok for every account's resource, in the text a
// write sends: index id-1 holds account id's.
func (e *env) signedTokens(ctx context.Context, tok tokens.Token) ([]string, error) {
	out := make([]string, Accounts)
	for id := int64(1); id <= Accounts; id++ {
		keys, err := e.work.op.Resources(nil, e.work.args(id))
		if err != nil {
			return nil, err
		}
		signed, err := e.auth.Sign(ctx, tok.Unsigned(), keys[0], "")
		if err != nil {
			return nil, fmt.Errorf("bench: signing the accounts' tokens: %w", err)
		}
		out[id-1] = signed.String()
	}
	return out, nil
}

// directPath is the reference path writing with tok on a pool of its own
// of size connections; closePool closes that pool.
func (e *env) directPath(ctx context.Context, size int, tok tokens.Token) (write writeFunc, closePool func(), err error) {
	pool, err := newPool(ctx, e.cfg.DatabaseURL, size)
	if err != nil {
		return nil, nil, err
	}
	store, err := newDirectStore(pool)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return directWriter(store, e.work, tok), pool.Close, nil
}

// runDirect measures the reference path, its pool closed before the
// other path runs.
func (e *env) runDirect(ctx context.Context, n int, d Dist, size int, tok tokens.Token) (Path, error) {
	write, closePool, err := e.directPath(ctx, size, tok)
	if err != nil {
		return Path{}, err
	}
	defer closePool()
	return drive(ctx, n, d, e.cfg.window(), write), nil
}

// runOverhead measures what the gateway at addr adds to one client's
// write (see Overhead).
func (e *env) runOverhead(ctx context.Context, d Dist, tok tokens.Token, signed []string, addr string) (Overhead, error) {
	direct, closePool, err := e.directPath(ctx, 1, tok)
	if err != nil {
		return Overhead{}, err
	}
	defer closePool()
	gc := newLeanClient(addr, e.work.op.Name, signed, 1)
	defer gc.close()
	return measureOverhead(ctx, d, e.cfg.window(), direct, gc.write, signed, e.work.op.Name)
}
