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
// certificates, peers included, of etcd's CA. The certificate script
// makes a set that fits: each chains to its CA (etcd's for the members,
// the gateway's etcd identity and root; the other for the gateway's and
// PostgreSQL's server certificates and the application clients') and to
// no other, names the host its service is reached by, and is for the use
// it is put to; the gateway's serves a TLS client that trusts the CA.
func TestComposeTLSVariant(t *testing.T) {
	cmd := composeCommand(t)
	var out, errOut bytes.Buffer
	c := exec.Command(cmd[0], append(cmd[1:], "--file", "../docker-compose.yml", "--file", "../docker-compose.tls.yml", "config")...)
	c.Env = composeEnv(composePasswords)
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
	if gw["FENCEGW_ETCD_CACERT"] != "/certs/etcd-ca.crt" || gw["FENCEGW_ETCD_CERT"] != "/certs/fencegw-etcd.crt" {
		t.Errorf("the gateway trusts %s for etcd and shows it %s, want etcd's CA and its etcd identity", gw["FENCEGW_ETCD_CACERT"], gw["FENCEGW_ETCD_CERT"])
	}
	for _, m := range []string{"etcd1", "etcd2", "etcd3"} {
		env := cfg.Services[m].Environment
		if env["ETCD_CLIENT_CERT_AUTH"] != "true" || env["ETCD_PEER_CLIENT_CERT_AUTH"] != "true" || strings.Contains(env["ETCD_INITIAL_CLUSTER"], "http://") ||
			env["ETCD_TRUSTED_CA_FILE"] != "/certs/etcd-ca.crt" || env["ETCD_PEER_TRUSTED_CA_FILE"] != "/certs/etcd-ca.crt" {
			t.Errorf("%s: %v, want client and peer certificates of etcd's CA required, peers over https", m, env)
		}
	}

	dir := t.TempDir()
	if out, err := exec.Command("sh", "tls/make-certs.sh", dir).CombinedOutput(); err != nil {
		t.Fatalf("tls/make-certs.sh: %v\n%s", err, out)
	}
	pools := map[string]*x509.CertPool{}
	for _, name := range []string{"ca", "etcd-ca"} {
		pools[name] = x509.NewCertPool()
		pem, err := os.ReadFile(filepath.Join(dir, name+".crt"))
		if err != nil || !pools[name].AppendCertsFromPEM(pem) {
			t.Fatalf("%s.crt: %v", name, err)
		}
	}
	pool := pools["ca"]
	for _, tc := range []struct {
		name, ca, cn string
		usage        x509.ExtKeyUsage
		host         string
	}{
		{"fencegw", "ca", "fencegw", x509.ExtKeyUsageServerAuth, "fencegw"}, {"fencegw", "ca", "fencegw", x509.ExtKeyUsageServerAuth, "127.0.0.1"},
		{"etcd1", "etcd-ca", "etcd1", x509.ExtKeyUsageServerAuth, "etcd1"}, {"etcd2", "etcd-ca", "etcd2", x509.ExtKeyUsageClientAuth, "etcd2"}, {"etcd3", "etcd-ca", "etcd3", x509.ExtKeyUsageServerAuth, "etcd3"},
		{"postgres", "ca", "postgres", x509.ExtKeyUsageServerAuth, "postgres"}, {"billing", "ca", "billing", x509.ExtKeyUsageClientAuth, ""},
		{"fencegw-etcd", "etcd-ca", "fencegw", x509.ExtKeyUsageClientAuth, ""}, {"etcd-root", "etcd-ca", "root", x509.ExtKeyUsageClientAuth, ""},
	} {
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, tc.name+".crt"), filepath.Join(dir, tc.name+".key"))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pools[tc.ca], DNSName: tc.host, KeyUsages: []x509.ExtKeyUsage{tc.usage}}); err != nil {
			t.Errorf("%s for %s (%v): %v", tc.name, tc.host, tc.usage, err)
		}
		other := map[string]string{"ca": "etcd-ca", "etcd-ca": "ca"}[tc.ca]
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pools[other], KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err == nil {
			t.Errorf("%s chains to %s too: the two CAs must trust apart", tc.name, other)
		}
		if leaf.Subject.CommonName != tc.cn {
			t.Errorf("%s's common name is %q, want %q (etcd's user, for etcd's clients)", tc.name, leaf.Subject.CommonName, tc.cn)
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

// TestTLSComposeFileSaysItIsAnOverride: docker-compose.tls.yml alone is
// refused by compose with a message that does not say why (its services'
// images are docker-compose.yml's), so its first line says it is an
// override and its header names both files in order, as every page of the
// documentation that names it does; after docker-compose.yml it is taken.
func TestTLSComposeFileSaysItIsAnOverride(t *testing.T) {
	abs := func(f string) string {
		p, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := composeEnv(composePasswords)
	if out, err := composeConfigOf(t, env, abs("../docker-compose.tls.yml")); err == nil {
		t.Fatalf("compose took docker-compose.tls.yml alone: it is not the override this test knows\n%s", out)
	}
	if out, err := composeConfigOf(t, env, abs("../docker-compose.yml"), abs("../docker-compose.tls.yml")); err != nil {
		t.Fatalf("compose config of docker-compose.yml and docker-compose.tls.yml: %v\n%s", err, out)
	}
	b, err := os.ReadFile("../docker-compose.tls.yml")
	if err != nil {
		t.Fatal(err)
	}
	first, header, _ := strings.Cut(string(b), "\n")
	if !strings.HasPrefix(first, "# An override of docker-compose.yml") {
		t.Errorf("docker-compose.tls.yml's first line %q does not say it is an override of docker-compose.yml", first)
	}
	if !strings.Contains(header, "-f docker-compose.yml -f\n# docker-compose.tls.yml") && !strings.Contains(header, "-f docker-compose.yml -f docker-compose.tls.yml") {
		t.Error("docker-compose.tls.yml's header does not name both files, docker-compose.yml first")
	}
	pages, err := filepath.Glob("../docs/*/*.md")
	if err != nil {
		t.Fatal(err)
	}
	top, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range append(append(pages, top...), "../README.md") {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if text := string(b); strings.Contains(text, "docker-compose.tls.yml") && !strings.Contains(text, "override of `docker-compose.yml`") && !strings.Contains(text, "override of\n`docker-compose.yml`") {
			t.Errorf("%s names docker-compose.tls.yml without saying it is an override of `docker-compose.yml`", page)
		}
	}
}
