package deploy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.yaml.in/yaml/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/devserver/etcdserver"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// tlsStack is `compose config` of the TLS stack, with each service's
// mounts, container path to host path.
type tlsStack struct {
	composeConfig
	mounts map[string]map[string]string
}

// readTLSStack runs compose config on both files.
func readTLSStack(t *testing.T) tlsStack {
	t.Helper()
	cmd := composeCommand(t)
	var out, errOut bytes.Buffer
	c := exec.Command(cmd[0], append(cmd[1:], "--file", "../docker-compose.yml", "--file", "../docker-compose.tls.yml", "config")...)
	c.Env = composeEnv(composePasswords)
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		t.Fatalf("compose config with the TLS override: %v\n%s", err, &errOut)
	}
	s := tlsStack{mounts: map[string]map[string]string{}}
	if err := yaml.Unmarshal(out.Bytes(), &s.composeConfig); err != nil {
		t.Fatal(err)
	}
	for name, svc := range s.Services {
		s.mounts[name] = map[string]string{}
		for _, v := range svc.Volumes {
			switch v := v.(type) {
			case string: // Compose v1: SOURCE:TARGET[:MODE]
				if parts := strings.Split(v, ":"); len(parts) >= 2 {
					s.mounts[name][parts[1]] = parts[0]
				}
			case map[string]any: // v2: the long syntax
				src, _ := v["source"].(string)
				dst, _ := v["target"].(string)
				s.mounts[name][dst] = src
			}
		}
	}
	return s
}

// file is the host file that service sees at path, taken from certs
// instead of deploy/tls/certs: "" if the service does not mount it.
func (s tlsStack) file(t *testing.T, service, path, certs string) string {
	t.Helper()
	src, ok := s.mounts[service][path]
	if !ok {
		return ""
	}
	repoCerts, err := filepath.Abs("tls/certs")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(repoCerts, src)
	if err != nil || strings.HasPrefix(rel, "..") {
		t.Fatalf("%s mounts %s at %s: not one of deploy/tls/certs", service, src, path)
	}
	return filepath.Join(certs, rel)
}

// TestTLSTemplateEtcdLeastPrivilege: the TLS template's certificates
// (deploy/tls/make-certs.sh) and an embedded etcd configured as its
// members are (their certificate, the CA they trust, client certificates
// required), with its one-shot etcd-auth service run as it would be: an
// application client's certificate (billing) is refused in the handshake
// and reads and writes nothing; a member's certificate, of the CA etcd
// trusts but no etcd user, reads and writes nothing (the members'
// healthcheck still counts them healthy); the gateway's etcd identity,
// as the fencegw service mounts it, reads and writes the gateway's
// prefix and nothing else; root runs etcd-auth again with nothing to do.
// No service but etcd-auth holds root's key, none a CA's key.
func TestTLSTemplateEtcdLeastPrivilege(t *testing.T) {
	stack := readTLSStack(t)
	certs := t.TempDir()
	if out, err := exec.Command("sh", "tls/make-certs.sh", certs).CombinedOutput(); err != nil {
		t.Fatalf("tls/make-certs.sh: %v\n%s", err, out)
	}
	for name, mounts := range stack.mounts {
		for _, src := range mounts {
			base := filepath.Base(src)
			if (base == "etcd-root.key" && name != "etcd-auth") || base == "ca.key" || base == "etcd-ca.key" || base == "billing.key" || base == "certs" {
				t.Errorf("service %s mounts %s", name, src)
			}
		}
	}

	env := stack.Services["etcd1"].Environment
	member := etcdserver.TLS{
		CertFile: stack.file(t, "etcd1", env["ETCD_CERT_FILE"], certs), KeyFile: stack.file(t, "etcd1", env["ETCD_KEY_FILE"], certs),
		CAFile: stack.file(t, "etcd1", env["ETCD_TRUSTED_CA_FILE"], certs), ClientCertAuth: env["ETCD_CLIENT_CERT_AUTH"] == "true",
	}
	if member.CertFile == "" || member.KeyFile == "" || member.CAFile == "" || !member.ClientCertAuth || env["ETCD_PEER_TRUSTED_CA_FILE"] != env["ETCD_TRUSTED_CA_FILE"] {
		t.Fatalf("etcd1 is configured %v, mounting %v: want its pair, one CA for clients and peers, client certificates required", env, stack.mounts["etcd1"])
	}
	srv := testenv.PrivateEtcdWith(t, etcdserver.Options{TLS: &member})
	endpoints := srv.Endpoints()

	bin := imageBinary(t)
	runAuth := func() string {
		t.Helper()
		svc := stack.Services["etcd-auth"]
		cmd := exec.Command(bin, svc.Command...)
		cmd.Env = append(os.Environ(), "FENCEGW_ETCD="+strings.Join(endpoints, ","))
		for k, v := range svc.Environment {
			if strings.HasPrefix(v, "/certs/") {
				v = stack.file(t, "etcd-auth", v, certs)
			}
			if k != "FENCEGW_ETCD" {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the etcd-auth service: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := runAuth(); !strings.Contains(out, "etcd's auth turned on") {
		t.Fatalf("the etcd-auth service's first run said:\n%s", out)
	}
	if out := runAuth(); !strings.Contains(out, "nothing to do") {
		t.Fatalf("the etcd-auth service's second run, as root with auth on, said:\n%s", out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dial := func(caFile, certFile, keyFile string) (*clientv3.Client, authority.ClientConfig) {
		t.Helper()
		pem, err := os.ReadFile(caFile)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &tls.Config{RootCAs: x509.NewCertPool(), Certificates: []tls.Certificate{pair}}
		cfg.RootCAs.AppendCertsFromPEM(pem)
		cc := authority.ClientConfig{Endpoints: endpoints, TLS: cfg}
		cli, err := cc.Dial()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cli.Close() })
		return cli, cc
	}

	gw := stack.Services["fencegw"].Environment
	gateway, _ := dial(stack.file(t, "fencegw", gw["FENCEGW_ETCD_CACERT"], certs), stack.file(t, "fencegw", gw["FENCEGW_ETCD_CERT"], certs), stack.file(t, "fencegw", gw["FENCEGW_ETCD_KEY"], certs))
	if _, err := gateway.Put(ctx, "/fencegw/token-keys/probe", "x"); err != nil {
		t.Fatalf("the gateway's etcd identity writes its prefix: %v", err)
	}
	if _, err := gateway.Get(ctx, "/fencegw/", clientv3.WithPrefix()); err != nil {
		t.Fatalf("the gateway's etcd identity reads its prefix: %v", err)
	}
	if on, known := authority.NewEtcd(gateway, nil).AuthEnabled(ctx); !on || !known {
		t.Errorf("the gateway sees etcd's auth as on %t (known %t), want on: serve would warn", on, known)
	}

	memberCli, _ := dial(member.CAFile, member.CertFile, member.KeyFile)
	for what, call := range map[string]func() error{
		"the gateway: write elsewhere":   func() error { _, err := gateway.Put(ctx, "/elsewhere", "x"); return err },
		"the gateway: add a user":        func() error { _, err := gateway.UserAdd(ctx, "mallory", "pw"); return err },
		"the gateway: turn auth off":     func() error { _, err := gateway.AuthDisable(ctx); return err },
		"a member's cert: read the keys": func() error { _, err := memberCli.Get(ctx, "/fencegw/token-keys/", clientv3.WithPrefix()); return err },
		"a member's cert: write a key":   func() error { _, err := memberCli.Put(ctx, "/fencegw/token-keys/x", "x"); return err },
	} {
		if err := call(); !authority.AccessDenied(err) {
			t.Errorf("%s: %v, want refused", what, err)
		}
	}
	// What etcdctl endpoint health asks, with a member's certificate.
	if _, err := memberCli.Get(ctx, "health", clientv3.WithSerializable()); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("the members' healthcheck read: %v, want permission denied, which etcdctl counts as healthy", err)
	}
	if _, err := memberCli.AlarmList(ctx); err != nil {
		t.Errorf("the members' healthcheck alarm list: %v", err)
	}

	_, billing := dial(filepath.Join(certs, "etcd-ca.crt"), filepath.Join(certs, "billing.crt"), filepath.Join(certs, "billing.key"))
	var tlsErr *authority.TLSError
	if err := billing.ProbeAll(ctx); !errors.As(err, &tlsErr) || tlsErr.Problem != authority.ClientRefused {
		t.Errorf("the application client's certificate: %v, want refused in the handshake", err)
	}
	billingCli, err := billing.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer billingCli.Close()
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	defer cancelShort()
	if _, err := billingCli.Get(short, "/fencegw/token-keys/", clientv3.WithPrefix()); err == nil {
		t.Error("the application client's certificate read the signing keys")
	}
	if _, err := billingCli.Put(short, "/fencegw/token-keys/x", "x"); err == nil {
		t.Error("the application client's certificate wrote a signing key")
	}
}
