package etcdserver

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"runtime"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func startServer(t *testing.T, dir string) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	begin := time.Now()
	s, err := Start(ctx, dir)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("Start took %s, endpoints %v", time.Since(begin).Round(time.Millisecond), s.Endpoints())
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newClient(t *testing.T, s *Server) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   s.Endpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("clientv3.New: %v", err)
	}
	return cli
}

func put(t *testing.T, cli *clientv3.Client, k, v string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, k, v); err != nil {
		t.Fatalf("Put %s: %v", k, err)
	}
}

// get returns "" for a missing key.
func get(t *testing.T, cli *clientv3.Client, k string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, k)
	if err != nil {
		t.Fatalf("Get %s: %v", k, err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

func TestPutGetClose(t *testing.T) {
	before := runtime.NumGoroutine()
	s := startServer(t, "")
	cli := newClient(t, s)
	put(t, cli, "k", "v")
	if got := get(t, cli, "k"); got != "v" {
		t.Errorf("Get k = %q, want v", got)
	}
	if err := cli.Close(); err != nil {
		t.Errorf("client Close: %v", err)
	}

	begin := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	t.Logf("Close took %s", time.Since(begin).Round(time.Millisecond))
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := os.Stat(s.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp dir %s survived Close (stat err %v)", s.dir, err)
	}
	for _, ep := range s.Endpoints() {
		u, err := url.Parse(ep)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
			c.Close()
			t.Errorf("endpoint %s still accepts connections after Close", ep)
		}
	}

	// Some etcd and gRPC goroutines wind down just after Close returns;
	// allow them a moment, and a little slack for runtime helpers.
	const slack = 5
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+slack && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+slack {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestSeveralServersAreIndependent(t *testing.T) {
	a, b := startServer(t, ""), startServer(t, "")
	if a.Endpoints()[0] == b.Endpoints()[0] {
		t.Fatalf("servers share endpoint %s", a.Endpoints()[0])
	}
	ca, cb := newClient(t, a), newClient(t, b)
	defer ca.Close()
	defer cb.Close()
	put(t, ca, "only-in-a", "1")
	if got := get(t, cb, "only-in-a"); got != "" {
		t.Errorf("server b sees server a's key: %q", got)
	}
}

func TestRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	cli := newClient(t, s)
	put(t, cli, "k", "kept")
	cli.Close()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("caller dir removed by Close: %v", err)
	}

	s2 := startServer(t, dir)
	cli2 := newClient(t, s2)
	defer cli2.Close()
	if got := get(t, cli2, "k"); got != "kept" {
		t.Errorf("after restart Get k = %q, want kept", got)
	}
}

func TestStartCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Start(ctx, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with canceled ctx: err = %v, want context.Canceled", err)
	}
}

func TestStartBadDirFails(t *testing.T) {
	file := t.TempDir() + "/not-a-dir"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, file)
	if err == nil {
		s.Close()
		t.Fatal("Start with a file as data dir succeeded")
	}
	t.Logf("error: %v", err)
}
