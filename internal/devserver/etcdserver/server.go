package etcdserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
)

// ErrStopped is wrapped when etcd stops before it becomes ready.
var ErrStopped = errors.New("etcdserver: server stopped before becoming ready")

// portAttempts bounds retries when a picked free port is taken before etcd
// binds it.
const portAttempts = 4

// seq makes member names unique within the process.
var seq atomic.Uint64

// Server is a running embedded etcd member.
type Server struct {
	etcd      *embed.Etcd
	dir       string
	ownsDir   bool
	endpoints []string
	closing   atomic.Bool // mutes the logger during Close

	closeOnce sync.Once
	closeErr  error
}

// Start runs a single-member etcd with its data in dir ("" = a temporary
// directory removed by Close) and returns once it serves requests. ctx
// bounds startup only. Its errors go to stderr in etcd's own shape.
func Start(ctx context.Context, dir string) (*Server, error) {
	return StartLogged(ctx, dir, nil)
}

// StartLogged is Start with etcd's errors and warnings written through
// log, in the process's own log shape (nil: as Start).
func StartLogged(ctx context.Context, dir string, log *slog.Logger) (*Server, error) {
	return StartWith(ctx, Options{Dir: dir, Log: log})
}

// StartWith runs a single-member etcd as opts say and returns once it
// serves requests. ctx bounds startup only.
func StartWith(ctx context.Context, opts Options) (_ *Server, err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("etcdserver start: %w", err)
	}
	s := &Server{dir: opts.Dir}
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "fencegw-etcd-"); err != nil {
			return nil, fmt.Errorf("etcdserver start: %w", err)
		}
		s.ownsDir = true
	}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()

	lg, err := newLogger(&s.closing, opts.Log)
	if err != nil {
		return nil, fmt.Errorf("etcdserver start: %w", err)
	}
	name := fmt.Sprintf("fencegw-%d-%d", os.Getpid(), seq.Add(1))
	for attempt := 1; ; attempt++ {
		cfg, err := newConfig(name, s.dir, lg, opts.TLS)
		if err != nil {
			return nil, fmt.Errorf("etcdserver start: %w", err)
		}
		s.etcd, err = embed.StartEtcd(cfg)
		if err == nil {
			break
		}
		if attempt >= portAttempts || !addrInUse(err) {
			return nil, fmt.Errorf("etcdserver start: %w", err)
		}
	}
	for _, u := range s.etcd.Config().AdvertiseClientUrls {
		s.endpoints = append(s.endpoints, u.String())
	}

	select {
	case <-s.etcd.Server.ReadyNotify():
		return s, nil
	case err := <-s.etcd.Err():
		// A nil error means the channel was closed: etcd is over.
		return nil, fmt.Errorf("etcdserver start: %w", errors.Join(ErrStopped, err))
	case <-s.etcd.Server.StopNotify():
		return nil, fmt.Errorf("etcdserver start: %w", ErrStopped)
	case <-ctx.Done():
		return nil, fmt.Errorf("etcdserver start: waiting for ready: %w", ctx.Err())
	}
}

// addrInUse matches by text too, since etcd does not always wrap listener
// errors with %w.
func addrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// Endpoints returns the client URLs, e.g. http://127.0.0.1:PORT
// (https:// with TLS).
func (s *Server) Endpoints() []string {
	return append([]string(nil), s.endpoints...)
}

// Close stops the server and removes its directory if Start created it. It
// is idempotent. Open client streams (e.g. watches) can delay it by a few
// seconds, so close clients first.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if s.etcd != nil {
			s.closing.Store(true)
			s.etcd.Close()
		}
		if s.ownsDir {
			if err := os.RemoveAll(s.dir); err != nil {
				s.closeErr = fmt.Errorf("etcdserver close: %w", err)
			}
		}
	})
	return s.closeErr
}
