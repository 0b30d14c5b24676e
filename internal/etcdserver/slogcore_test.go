package etcdserver

import (
	"bytes"
	"encoding/json"
	"log/slog"
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
