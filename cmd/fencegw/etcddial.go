package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
)

// dialEtcd is a command's etcd client, as cfg's endpoints and access say:
// their files read, the TLS handshake tried first, for
// authority.DialTimeout at most: etcd's client would retry a handshake
// that cannot succeed until the command's time ran out, and then say
// only that. cmd names the command in a flag's error; etcdError gives
// the others their words.
func dialEtcd(ctx context.Context, cfg serveConfig, cmd string) (*clientv3.Client, error) {
	cc, err := cfg.EtcdAccess.clientConfig(cfg.EtcdEndpoints, cmd)
	if err != nil {
		return nil, err
	}
	if err := cc.ProbeAll(ctx); err != nil {
		return nil, err
	}
	return cc.Dial()
}

// waitEtcd is serve's etcd: dialed as dialEtcd does, then asked for its
// revision until it answers or ctx ends, so that a gateway started while
// etcd is down, restarting or electing a leader waits for it. A TLS
// handshake etcd refuses, or a user it refuses, ends the wait at once:
// time will not fix them.
func waitEtcd(ctx context.Context, cfg serveConfig, log *slog.Logger, cmd string, keks authority.KEKs) (*clientv3.Client, *authority.Etcd, error) {
	cc, err := cfg.EtcdAccess.clientConfig(cfg.EtcdEndpoints, cmd)
	if err != nil {
		return nil, nil, err
	}
	var cli *clientv3.Client
	var auth *authority.Etcd
	stopWaiting := sayWaiting(log, "etcd", strings.Join(cfg.EtcdEndpoints, ","))
	err = retryWhile(ctx, func(err error) bool { return etcdUnavailable(err) && !authority.AccessDenied(err) }, func() error {
		if err := cc.ProbeAll(ctx); err != nil {
			return err
		}
		if cli == nil {
			c, err := cc.Dial() // with a user, this asks etcd
			if err != nil {
				return err
			}
			cli, auth = c, authority.NewEtcd(c, keks)
		}
		callCtx, cancel := context.WithTimeout(ctx, authority.DialTimeout)
		defer cancel()
		_, err := auth.Revision(callCtx)
		return err
	})
	stopWaiting()
	if err != nil {
		if cli != nil {
			_ = cli.Close()
		}
		return nil, nil, etcdError(cmd, cfg, err)
	}
	return cli, auth, nil
}

// etcdError is err, from cmd's work with etcd, in words: the endpoints
// named when etcd could not be asked or refused the user, and a hint
// naming the flags that fix a TLS handshake or a user etcd refused.
func etcdError(cmd string, cfg serveConfig, err error) error {
	var tlsErr *authority.TLSError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tlsErr):
		err = fmt.Errorf("%s: %w", cmd, err) // it names its endpoint
	case errors.Is(err, authority.ErrUnavailable) || authority.AccessDenied(err):
		err = fmt.Errorf("%s: etcd at %s: %w", cmd, strings.Join(cfg.EtcdEndpoints, ","), err)
	}
	if hint := etcdHint(cfg.EtcdAccess, err); hint != "" {
		return fmt.Errorf("%w; %s", err, hint)
	}
	return err
}

// etcdHint names the flags that fix err, "" if none do.
func etcdHint(a etcdAccess, err error) string {
	var tlsErr *authority.TLSError
	var problem authority.TLSProblem
	if errors.As(err, &tlsErr) {
		problem = tlsErr.Problem
	}
	switch {
	case problem == authority.ServerNotTrusted && a.CACert == "":
		return "no --etcd-cacert was given, so the system's CAs were asked: give --etcd-cacert, the CA that signed etcd's certificate"
	case problem == authority.ServerNotTrusted:
		return "--etcd-cacert must name the CA that signed etcd's certificate, and that certificate must name the endpoint's host"
	case problem == authority.ClientRefused && a.Cert == "":
		return "etcd wants a client certificate (its --client-cert-auth): give --etcd-cert and --etcd-key"
	case problem == authority.ClientRefused:
		return "etcd refused --etcd-cert: it must be a client certificate signed by a CA etcd trusts (its --trusted-ca-file)"
	case problem == authority.NotTLS:
		return "the endpoint is plaintext: give etcd's TLS endpoint, or drop --etcd-cacert, --etcd-cert and --etcd-key"
	case authority.AccessDenied(err) && a.User == "":
		return "etcd's auth is on: give --etcd-user and --etcd-password-file, or an --etcd-cert whose common name is an etcd user"
	case authority.AccessDenied(err):
		return fmt.Sprintf("check --etcd-user (%s) and --etcd-password-file, and that the user's role may read and write the keys under /fencegw/", a.User)
	}
	return ""
}
