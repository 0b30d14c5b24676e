package etcdserver

import (
	"fmt"
	"log/slog"
	"sync/atomic"

	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// benignErrors are error-level etcd messages that need no action here. The
// storage version monitor can run before the first commit reaches the
// backend read buffer ("missing term information") and simply retries.
var benignErrors = map[string]bool{
	"failed to update storage version": true,
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
	if c.Enabled(e.Level) && !benignErrors[e.Message] {
		return ce.AddCore(e, c)
	}
	return ce
}
