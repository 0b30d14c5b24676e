package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// serveOps serves h, the gateway's /livez, /readyz and /metrics, in plain
// HTTP on f.OpsListen, if set, until stop is called; stop drains it within
// drain.
func serveOps(f tlsFlags, h http.Handler, log *slog.Logger, drain time.Duration) (stop func(), err error) {
	if f.OpsListen == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", f.OpsListen)
	if err != nil {
		return nil, fmt.Errorf("--ops-listen: %w", err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	log.Info("fencegw serving /livez, /readyz and /metrics", "addr", ln.Addr().String())
	if f.opsBound != nil {
		f.opsBound(ln.Addr().String())
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), drain)
		defer cancel()
		srv.SetKeepAlivesEnabled(false)
		_ = srv.Shutdown(ctx)
		<-served
	}, nil
}
