package authority

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// DialTimeout bounds Dial's authentication with a user name, and each
// endpoint's Probe.
const DialTimeout = 5 * time.Second

// ErrAccessDenied means etcd answered, and refused this client: a wrong
// user name or password, no user where etcd's auth wants one, or a user
// without permission on fencegw's keys (/fencegw/). Asking again will not
// help.
var ErrAccessDenied = errors.New("authority: etcd refused access")

// ClientConfig is how to reach etcd: where, over what, as whom.
type ClientConfig struct {
	// Endpoints are host:port or URLs; https:// (or host:port with TLS
	// set) is TLS, http:// never is.
	Endpoints []string
	// TLS, if set, is the client side of every TLS connection: the CAs
	// that verify etcd and the client certificate it may ask for.
	TLS *tls.Config
	// Username and Password authenticate to etcd's auth, if enabled.
	Username, Password string
}

// Dial returns an etcd client for a gateway or a command. Its reconnects
// back off to at most two seconds: gRPC's default grows to two minutes, so
// after an outage a gateway could stay unready long after etcd was back.
// Without a user it does not wait for etcd; with one it authenticates
// first, for DialTimeout at most: an error wraps ErrAccessDenied if etcd
// refused the user, ErrUnavailable if it could not be asked.
func (c ClientConfig) Dial() (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints,
		DialTimeout: DialTimeout,
		TLS:         c.TLS,
		Username:    c.Username,
		Password:    c.Password,
		Logger:      zap.NewNop(), // it reports every retry; the gateway logs what matters
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: 2 * time.Second,
		})},
	})
	switch {
	case err == nil:
		return cli, nil
	case AccessDenied(err):
		return nil, fmt.Errorf("authenticate as %q: %w: %w", c.Username, ErrAccessDenied, err)
	case c.Username != "":
		return nil, unavailable(fmt.Sprintf("authenticate as %q", c.Username), err)
	}
	return nil, err
}

// AccessDenied reports whether err says etcd refused this client's user
// or its permissions (rather than that it could not be asked).
func AccessDenied(err error) bool {
	for _, refusal := range []error{
		ErrAccessDenied, rpctypes.ErrAuthFailed, rpctypes.ErrPermissionDenied,
		rpctypes.ErrUserEmpty, rpctypes.ErrUserNotFound, // a certificate's common name that is no user
	} {
		if errors.Is(err, refusal) {
			return true
		}
	}
	return false
}

// ProbeAll is Probe bounded by DialTimeout.
func (c ClientConfig) ProbeAll(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	return c.Probe(ctx)
}
