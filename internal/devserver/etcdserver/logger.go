package etcdserver

import (
	"fmt"
	"log/slog"
	"sync/atomic"

	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// benign are warnings and errors of etcd that need no action from whoever
// reads this process's log. The storage version monitor can run before the
// first commit reaches the backend read buffer ("missing term
// information") and simply retries. The others describe how this
// in-process, single-member, loopback-only server is set up on purpose
// (one port for HTTP and gRPC, simple tokens for its unused
// authentication): told to a newcomer running `fencegw dev`, they read as
// faults.
var benign = map[string]bool{
	"failed to update storage version": true,
	"Failed to detect schema version":  true,
	"Running http and grpc server on single port. This is not recommended for production.": true,
	"simple token is not cryptographically signed":                                         true,
}

// newLogger builds etcd's logger, muted once closing is set: shutting down
// makes etcd log every listener it closes as an error, which would bury
// real failures in test output. With log, warnings and errors go through
// it; without, errors go to stderr as etcd writes them.
func newLogger(closing *atomic.Bool, log *slog.Logger) (*zap.Logger, error) {
	if log != nil {
		return zap.New(&filterCore{Core: newSlogCore(log.Handler(), zapcore.WarnLevel), muted: closing}), nil
	}
	cfg := logutil.DefaultZapLoggerConfig
	cfg.Level = zap.NewAtomicLevelAt(zap.ErrorLevel)
	cfg.DisableStacktrace = true
	lg, err := cfg.Build(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return &filterCore{Core: c, muted: closing}
	}))
	if err != nil {
		return nil, fmt.Errorf("new logger: %w", err)
	}
	return lg, nil
}

// filterCore drops benign entries, and every entry while muted is set.
type filterCore struct {
	zapcore.Core
	muted *atomic.Bool
}

func (c *filterCore) Enabled(l zapcore.Level) bool {
	return !c.muted.Load() && c.Core.Enabled(l)
}

func (c *filterCore) With(fields []zapcore.Field) zapcore.Core {
	return &filterCore{Core: c.Core.With(fields), muted: c.muted}
}

func (c *filterCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) && !benign[e.Message] {
		return ce.AddCore(e, c)
	}
	return ce
}
