package deploy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestComposeTLSVariant: Compose accepts the TLS override on the stack; in
// it every service of the fencegw image reaches PostgreSQL with
// verify-full, the gateway reaches etcd over https with a client
// certificate and serves HTTPS, and the etcd members require client
// certificates, peers included. The certificate script makes a set that
// fits: each chains to the CA, names the host its service is reached by,
// and is for the use it is put to; the gateway's serves a TLS client that
// trusts the CA.
func TestComposeTLSVariant(t *testing.T) {
	cmd := composeCommand(t)
	var out, errOut bytes.Buffer
	c := exec.Command(cmd[0], append(cmd[1:], "--file", "../docker-compose.yml", "--file", "../docker-compose.tls.yml", "config")...)
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		t.Fatalf("compose config with the TLS override: %v\n%s", err, &errOut)
	}
	var cfg composeConfig
	if err := yaml.Unmarshal(out.Bytes(), &cfg); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"migrate", "migrate-demo", "guard", "grants", "fencegw"} {
		if u := cfg.Services[name].Environment["FENCEGW_DATABASE_URL"]; !strings.Contains(u, "sslmode=verify-full") || !strings.Contains(u, "sslrootcert=") {
			t.Errorf("%s reaches PostgreSQL as %q, want verify-full", name, u)
		}
	}
	gw := cfg.Services["fencegw"].Environment
	for _, k := range []string{"FENCEGW_TLS_CERT_FILE", "FENCEGW_TLS_KEY_FILE", "FENCEGW_ETCD_CACERT", "FENCEGW_ETCD_CERT", "FENCEGW_ETCD_KEY"} {
		if gw[k] == "" {
			t.Errorf("the gateway has no %s", k)
		}
	}
	if strings.Count(gw["FENCEGW_ETCD"], "https://") != 3 {
		t.Errorf("the gateway's etcd endpoints %q, want the three members over https", gw["FENCEGW_ETCD"])
	}
	for _, m := range []string{"etcd1", "etcd2", "etcd3"} {
		env := cfg.Services[m].Environment
		if env["ETCD_CLIENT_CERT_AUTH"] != "true" || env["ETCD_PEER_CLIENT_CERT_AUTH"] != "true" || strings.Contains(env["ETCD_INITIAL_CLUSTER"], "http://") {
			t.Errorf("%s: %v, want client and peer certificates required, peers over https", m, env)
		}
	}

	dir := t.TempDir()
	if out, err := exec.Command("sh", "tls/make-certs.sh", dir).CombinedOutput(); err != nil {
		t.Fatalf("tls/make-certs.sh: %v\n%s", err, out)
	}
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil || !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("ca.crt: %v", err)
	}
	for _, tc := range []struct {
		name  string
		usage x509.ExtKeyUsage
		host  string
	}{
		{"fencegw", x509.ExtKeyUsageServerAuth, "fencegw"}, {"fencegw", x509.ExtKeyUsageServerAuth, "127.0.0.1"},
		{"etcd1", x509.ExtKeyUsageServerAuth, "etcd1"}, {"etcd2", x509.ExtKeyUsageClientAuth, "etcd2"}, {"etcd3", x509.ExtKeyUsageServerAuth, "etcd3"},
		{"postgres", x509.ExtKeyUsageServerAuth, "postgres"}, {"fencegw-etcd", x509.ExtKeyUsageClientAuth, ""}, {"billing", x509.ExtKeyUsageClientAuth, ""},
	} {
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, tc.name+".crt"), filepath.Join(dir, tc.name+".key"))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: tc.host, KeyUsages: []x509.ExtKeyUsage{tc.usage}}); err != nil {
			t.Errorf("%s for %s (%v): %v", tc.name, tc.host, tc.usage, err)
		}
	}
	billing, _ := tls.LoadX509KeyPair(filepath.Join(dir, "billing.crt"), filepath.Join(dir, "billing.key"))
	if leaf, _ := x509.ParseCertificate(billing.Certificate[0]); len(leaf.URIs) != 1 || leaf.URIs[0].String() != "spiffe://fencegw.local/billing" {
		t.Errorf("billing's certificate names %v, want spiffe://fencegw.local/billing", leaf.URIs)
	}

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	gwPair, _ := tls.LoadX509KeyPair(filepath.Join(dir, "fencegw.crt"), filepath.Join(dir, "fencegw.key"))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{gwPair}}
	srv.StartTLS()
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatalf("a client trusting ca.crt and the gateway's certificate at %s: %v", srv.URL, err)
	}
	resp.Body.Close()
	prom, err := os.ReadFile("prometheus-tls.yml")
	if err != nil || !strings.Contains(string(prom), `"fencegw:9091"`) || !strings.Contains(gw["FENCEGW_OPS_LISTEN"], ":9091") {
		t.Errorf("Prometheus scrapes %q (%v), the ops listener is %q: want them to meet", prom, err, gw["FENCEGW_OPS_LISTEN"])
	}
}
