package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestDefaultMaxConnections: the default limit leaves a quarter of the
// file descriptors, at most 1,024, to the backends.
func TestDefaultMaxConnections(t *testing.T) {
	for _, c := range []struct {
		nofile uint64
		want   int
	}{
		{1, 1}, {4, 3}, {1024, 768}, {4096, 3072}, {20_000, 18_976}, {1 << 20, 1<<20 - 1024}, {1 << 62, 1 << 30},
	} {
		if got := connectionsFor(c.nofile); got != c.want {
			t.Errorf("connectionsFor(%d) = %d, want %d", c.nofile, got, c.want)
		}
	}
	if got, why := maxConnections(7); got != 7 || why != "--max-connections" {
		t.Errorf("maxConnections(7) = %d, %q; want the flag's 7", got, why)
	}
	if got, _ := maxConnections(0); got < 1 {
		t.Errorf("maxConnections(0) = %d, want a positive default", got)
	}
}

// TestMaxConnectionsRefusesNegative: a negative limit is a usage error of
// serve and dev, before anything starts.
func TestMaxConnectionsRefusesNegative(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--max-connections", "-1", "--database-url", "postgres://x@127.0.0.1:1/x", "--etcd", "127.0.0.1:1", "--policy", "../../testdata/demo/policy.yaml"},
		{"dev", "--max-connections", "-1"},
	} {
		if err := execute(context.Background(), io.Discard, args...); !errors.Is(err, errUsage) {
			t.Errorf("%q = %v, want a usage error", args, err)
		}
	}
}

// TestServeLimitsConnections: serve puts --max-connections on its API
// listener: with the one connection allowed open, the next is answered
// 503 and closed.
func TestServeLimitsConnections(t *testing.T) {
	cfg := serveConfigFor(t, migrated(t), "../../testdata/demo/policy.yaml")
	cfg.MaxConnections = 1
	ctx, cancel := context.WithCancel(context.Background())
	addrs, served := make(chan string, 1), make(chan error, 1)
	go func() { served <- serve(ctx, cfg, func(a string) { addrs <- a }) }()
	defer func() { cancel(); <-served }()
	addr := <-addrs

	get := func() (*http.Response, net.Conn) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(c, "GET /livez HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp, c
	}
	held, conn := get()
	defer conn.Close()
	if held.StatusCode != http.StatusOK {
		t.Fatalf("the first connection: %d, want 200", held.StatusCode)
	}
	refused, conn2 := get()
	defer conn2.Close()
	if refused.StatusCode != http.StatusServiceUnavailable || !refused.Close {
		t.Fatalf("the second connection: %d (close %v), want 503 and Connection: close", refused.StatusCode, refused.Close)
	}
}
