package torture

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencegw/fencegw/internal/harness/testcerts"
)

// etcdTLS is how the cluster and its clients meet with --etcd-tls: a CA
// of the run's, a certificate for 127.0.0.1 the members serve, and a
// client certificate they require (etcd's --client-cert-auth), as a
// production etcd does. A nil *etcdTLS is plaintext.
type etcdTLS struct {
	files  testcerts.Files
	client *tls.Config
}

// newEtcdTLS makes the run's certificates in dir/etcd-tls.
func newEtcdTLS(dir string) (*etcdTLS, error) {
	dir = filepath.Join(dir, "etcd-tls")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	files, err := testcerts.WriteFiles(dir, []string{"127.0.0.1"}, "fencegw-torture")
	if err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	pair, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	ca, err := os.ReadFile(files.CA)
	if err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	return &etcdTLS{files: files, client: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}}, nil
}

// scheme is the members' client URLs' scheme.
func (t *etcdTLS) scheme() string {
	if t == nil {
		return "http"
	}
	return "https"
}

// memberArgs are a member's flags (MemberMain's) to serve TLS.
func (t *etcdTLS) memberArgs() []string {
	if t == nil {
		return nil
	}
	return []string{"--cert", t.files.ServerCert, "--key", t.files.ServerKey, "--ca", t.files.CA}
}

// etcdFlags are fencegw's flags to reach the cluster: its endpoints, and
// with TLS the CA and the client certificate.
func etcdFlags(members []*etcdMember) []string {
	flags := []string{"--etcd", strings.Join(endpoints(members), ",")}
	if t := members[0].tls; t != nil {
		flags = append(flags, "--etcd-cacert", t.files.CA, "--etcd-cert", t.files.ClientCert, "--etcd-key", t.files.ClientKey)
	}
	return flags
}

// clientConfig is the torture's own client of the members at eps.
func clientConfig(members []*etcdMember, eps ...string) clientv3.Config {
	cfg := clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if t := members[0].tls; t != nil {
		cfg.TLS = t.client.Clone()
	}
	return cfg
}
