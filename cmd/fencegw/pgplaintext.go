package main

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// warnPlaintextPostgres logs, at warn level, when serve's PostgreSQL
// traffic may cross a network unencrypted: the connection serve holds is
// not TLS and goes to an address that is not loopback, or the URL's
// sslmode (allow, prefer) lets a connection to a host that is not
// loopback fall back to plaintext. It names the hosts, never the URL,
// which may hold a password. A unix socket or loopback does not warn.
func warnPlaintextPostgres(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return // the pool's problem shows soon enough
	}
	netConn := conn.Conn().PgConn().Conn()
	_, encrypted := netConn.(*tls.Conn)
	remote := netConn.RemoteAddr()
	conn.Release()
	if hosts, why := plaintextPostgres(&pool.Config().ConnConfig.Config, remote, encrypted); len(hosts) > 0 {
		log.Warn("PostgreSQL without TLS to a host that is not loopback: its password and the data cross the network readable; use sslmode=verify-full with sslrootcert",
			slog.Any("hosts", hosts), slog.String("why", why))
	}
}

// plaintextPostgres says which hosts, not loopback, serve's PostgreSQL
// traffic may reach without TLS, and why: the connection to remote
// (encrypted or not) that serve holds, or cfg's sslmode.
func plaintextPostgres(cfg *pgconn.Config, remote net.Addr, encrypted bool) (hosts []string, why string) {
	if tcp, ok := remote.(*net.TCPAddr); ok && !encrypted && !tcp.IP.IsLoopback() {
		return []string{tcp.String()}, "the connection is not encrypted"
	}
	// With sslmode allow or prefer, pgx tries each host with and without
	// TLS: the entries without are the fallback an attacker can force.
	entries := append([]*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}}, cfg.Fallbacks...)
	tried := map[string]bool{}
	for _, fc := range entries {
		if fc.TLSConfig != nil {
			tried[fc.Host] = true
		}
	}
	for _, fc := range entries {
		if fc.TLSConfig == nil && tried[fc.Host] && !loopbackHost(fc.Host) && !slices.Contains(hosts, fc.Host) {
			hosts = append(hosts, fc.Host)
		}
	}
	if len(hosts) > 0 {
		why = "sslmode lets the connection fall back to plaintext (allow, prefer)"
	}
	return hosts, why
}

// loopbackHost reports whether a host of a PostgreSQL URL stays on this
// machine: a unix socket's folder, localhost or a loopback address.
func loopbackHost(host string) bool {
	if strings.HasPrefix(host, "/") || host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
