package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/node"
)

// inProcess is a gateway served from this process on loopback, so its
// allocations and memory can be read with the runtime's own counters.
type inProcess struct {
	url    string
	pool   *pgxpool.Pool
	srv    *http.Server
	served chan error
	// stopLoops stops the node's loops and waits for them.
	stopLoops func()
}

// startGateway serves a gateway whose pool holds at most poolSize
// connections, as `fencegw serve` would, with the node's loops that every
// lease's grant and end feed (the lock history, hold times, the reaper:
// watches of etcd and writes to PostgreSQL that a deployment pays for each
// lease), minus those on neither path (janitor, pruning, watchdog, audit).
func startGateway(ctx context.Context, e *env, poolSize int) (_ *inProcess, err error) {
	pool, err := newPool(ctx, e.cfg.DatabaseURL, poolSize)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			pool.Close()
		}
	}()
	log := cmp.Or(e.cfg.Logger, slog.New(slog.NewTextHandler(io.Discard, nil)))
	nd, err := node.New(node.Config{Pool: pool, Authority: e.auth, Policy: e.pol, Logger: log})
	if err != nil {
		return nil, err
	}
	gw, err := gateway.New(gateway.Config{
		Pool: pool, Authority: e.auth, Policy: e.pol, Node: nd, SchemaVersion: e.schemaVersion, NoGroupCommit: e.cfg.NoGroupCommit,
		MaxWriteTransactions: e.cfg.WriteTransactions, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	// Loads the current epoch: until then every token is of the wrong one.
	if err := nd.Watchdog().Check(ctx); err != nil {
		return nil, fmt.Errorf("bench: gateway: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: gateway: %w", err)
	}
	g := &inProcess{
		url:  "http://" + ln.Addr().String(),
		pool: pool,
		srv: &http.Server{
			Handler:           gw.Handler(),
			ReadHeaderTimeout: 5 * time.Second,
			IdleTimeout:       2 * time.Minute,
		},
		served: make(chan error, 1),
	}
	g.stopLoops = node.RunLoops(context.Background(), nd.RunHistory, nd.RunHoldTimes, nd.RunReaper)
	go func() { g.served <- g.srv.Serve(ln) }()
	gw.SetReady(true)
	return g, nil
}

// close stops serving, waiting a little for requests in flight; the load
// has ended by then, so there should be none.
func (g *inProcess) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := g.srv.Shutdown(ctx)
	if serr := <-g.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	g.stopLoops()
	g.pool.Close()
	if err != nil {
		return fmt.Errorf("bench: stop gateway: %w", err)
	}
	return nil
}
