package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// serveOps serves h, the gateway's /livez, /readyz and /metrics, on addr
// in plain HTTP until the returned stop is called; stop drains it within
// ctx.
func serveOps(addr string, h http.Handler, log *slog.Logger, bound func(string)) (stop func(context.Context) error, err error) {
	ln, err := net.Listen("tcp", addr)
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
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("fencegw serving /livez, /readyz and /metrics", "addr", ln.Addr().String())
	if bound != nil {
		bound(ln.Addr().String())
	}
	return func(ctx context.Context) error {
		srv.SetKeepAlivesEnabled(false)
		err := srv.Shutdown(ctx)
		if served := <-served; !errors.Is(served, http.ErrServerClosed) {
			return fmt.Errorf("--ops-listen: %w", served)
		}
		return err
	}, nil
}
