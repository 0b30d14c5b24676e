package etcdserver

import (
	"context"
	"log/slog"
	"time"

	"go.uber.org/zap/zapcore"
)

// slogCore writes zap entries (the embedded etcd's) through a slog
// handler, so that they come out in the shape and place of the process's
// own log lines. Fields become attributes; the entry's logger name, if
// any, the attribute "logger".
type slogCore struct {
	h     slog.Handler
	level zapcore.Level // the least severe level written
}

func newSlogCore(h slog.Handler, level zapcore.Level) zapcore.Core {
	return &slogCore{h: h, level: level}
}

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	return l >= c.level && c.h.Enabled(context.Background(), slogLevel(l))
}

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{h: c.h.WithAttrs(attrs(fields)), level: c.level}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	r := slog.NewRecord(e.Time, slogLevel(e.Level), e.Message, 0)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	r.AddAttrs(attrs(fields)...)
	return c.h.Handle(context.Background(), r)
}

func (c *slogCore) Sync() error { return nil }

// attrs converts zap fields to slog attributes by way of zap's own map
// encoder, which knows every field type.
func attrs(fields []zapcore.Field) []slog.Attr {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	out := make([]slog.Attr, 0, len(enc.Fields))
	for k, v := range enc.Fields {
		if d, ok := v.(time.Duration); ok {
			out = append(out, slog.String(k, d.String())) // as text, as fencegw logs durations
			continue
		}
		out = append(out, slog.Any(k, v))
	}
	return out
}
