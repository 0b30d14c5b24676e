package etcdserver

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestEtcdLogsInTheProcesssShape: etcd's zap entries come out as slog
// JSON lines, fields as attributes, below warn dropped, nothing once muted.
func TestEtcdLogsInTheProcesssShape(t *testing.T) {
	var buf bytes.Buffer
	var closing atomic.Bool
	lg, err := newLogger(&closing, slog.New(slog.NewJSONHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	lg.Named("raft").With(zap.String("member", "m1")).Warn("slow apply", zap.Duration("took", 1500*time.Millisecond), zap.Int("n", 3))
	lg.Info("chatty")
	closing.Store(true)
	lg.Error("closing listener")

	var m map[string]any
	dec := json.NewDecoder(&buf)
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("no JSON line: %v (%q)", err, buf.String())
	}
	want := map[string]any{"level": "WARN", "msg": "slow apply", "logger": "raft", "member": "m1", "took": "1.5s", "n": float64(3)}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v (%T), want %v", k, m[k], m[k], v)
		}
	}
	if dec.More() {
		t.Errorf("more lines than the warning: %q", buf.String())
	}
}

// TestStartUpSaysNothingToActOn: a server started with a logger writes no
// warning about its own, deliberate set-up (the newcomer's `fencegw dev`).
func TestStartUpSaysNothingToActOn(t *testing.T) {
	var buf syncBuffer
	s, err := StartLogged(t.Context(), "", slog.New(slog.NewTextHandler(&buf, nil))) // a directory of its own, as dev starts it
	if err != nil {
		t.Fatal(err)
	}
	cli := newClient(t, s)
	put(t, cli, "k", "v") // past start-up: the first commit
	cli.Close()
	s.Close()
	if out := buf.String(); out != "" {
		t.Errorf("start-up logged:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for etcd's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
