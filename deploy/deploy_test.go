// Package deploy holds the compose stack's configuration (Prometheus,
// Grafana) and the tests that keep it honest: images cannot be pulled on
// the machines this is developed on, so the pieces are checked here.
package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/testgw"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// composeConfig is what `docker compose config` says the stack is.
type composeConfig struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Ports       []any             `yaml:"ports"`
		Volumes     []any             `yaml:"volumes"`
	} `yaml:"services"`
}

// composeCommand finds Compose: v1's docker-compose, or the v2 plugin.
func composeCommand(t *testing.T) []string {
	if p, err := exec.LookPath("docker-compose"); err == nil {
		return []string{p}
	}
	if p, err := exec.LookPath("docker"); err == nil && exec.Command(p, "compose", "version").Run() == nil {
		return []string{p, "compose"}
	}
	t.Fatal("neither docker-compose nor docker compose is installed: apt-get install docker-compose (.ci/run does)")
	return nil
}

// composePasswords are the variables the compose files need, none of them
// built in; test values here.
var composePasswords = map[string]string{
	"POSTGRES_PASSWORD": "owner-test-password", "FENCEGW_GATEWAY_PASSWORD": "gateway-test-password", "GRAFANA_ADMIN_PASSWORD": "grafana-test-password",
}

// composeEnv is this process's environment without the compose files'
// password variables, and with those of set.
func composeEnv(set map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); composePasswords[k] == "" {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// composeConfigOf runs `compose config` on files with env, and returns
// its output, or its error and what it said.
func composeConfigOf(t *testing.T, env []string, files ...string) ([]byte, error) {
	t.Helper()
	cmd := composeCommand(t)
	args := cmd[1:]
	for _, f := range files {
		args = append(args, "--file", f)
	}
	var out, errOut bytes.Buffer
	c := exec.Command(cmd[0], append(args, "config")...)
	c.Dir = t.TempDir() // no .env of the checkout's is read
	c.Env = env
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		return errOut.Bytes(), err
	}
	return out.Bytes(), nil
}

// TestComposeFilesBuildInNoPassword is issue 34's reproduction: the
// compose files carried default passwords (${VAR:-…}) and Grafana let
// anonymous viewers in. Now each password is a variable Compose refuses
// to run without, naming it, in both files; with them set, no password is
// in the configuration but theirs, and Grafana wants its admin's login.
func TestComposeFilesBuildInNoPassword(t *testing.T) {
	abs := func(f string) string {
		p, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, files := range [][]string{{abs("../docker-compose.yml")}, {abs("../docker-compose.yml"), abs("../docker-compose.tls.yml")}} {
		for missing := range composePasswords {
			set := maps.Clone(composePasswords)
			delete(set, missing)
			out, err := composeConfigOf(t, composeEnv(set), files...)
			if err == nil || !strings.Contains(string(out), "set "+missing+" in the environment or in .env") {
				t.Errorf("%v without %s: %v, said %s; want a refusal naming it", files, missing, err, out)
			}
		}
		out, err := composeConfigOf(t, composeEnv(composePasswords), files...)
		if err != nil {
			t.Fatalf("%v with the passwords set: %v\n%s", files, err, out)
		}
		for _, old := range []string{"fencegw-dev", "fencegw-gateway-dev"} {
			if strings.Contains(string(out), old) {
				t.Errorf("%v still carries the password %s", files, old)
			}
		}
		var cfg composeConfig
		if err := yaml.Unmarshal(out, &cfg); err != nil {
			t.Fatal(err)
		}
		g := cfg.Services["grafana"].Environment
		if g["GF_AUTH_ANONYMOUS_ENABLED"] != "false" || g["GF_SECURITY_ADMIN_PASSWORD"] != composePasswords["GRAFANA_ADMIN_PASSWORD"] {
			t.Errorf("%v: Grafana's environment %v, want no anonymous viewer and the admin's password from GRAFANA_ADMIN_PASSWORD", files, g)
		}
		if u := cfg.Services["fencegw"].Environment["FENCEGW_DATABASE_URL"]; !strings.Contains(u, ":"+composePasswords["FENCEGW_GATEWAY_PASSWORD"]+"@") {
			t.Errorf("%v: the gateway connects as %q, want FENCEGW_GATEWAY_PASSWORD's password", files, u)
		}
	}
}

// TestComposeFile: Compose accepts the file, every published port is on
// 127.0.0.1, etcd is a cluster of three that the gateway is told about,
// and Prometheus scrapes the gateway where it listens.
func TestComposeFile(t *testing.T) {
	cmd := composeCommand(t)
	var out, errOut bytes.Buffer
	c := exec.Command(cmd[0], append(cmd[1:], "--file", "../docker-compose.yml", "config")...)
	c.Env = composeEnv(composePasswords)
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		t.Fatalf("compose config: %v\n%s", err, &errOut)
	}
	var cfg composeConfig
	if err := yaml.Unmarshal(out.Bytes(), &cfg); err != nil {
		t.Fatalf("compose config output: %v", err)
	}
	for name, s := range cfg.Services {
		for _, p := range s.Ports {
			text, _ := yaml.Marshal(p)
			if !strings.Contains(string(text), "127.0.0.1") {
				t.Errorf("service %s publishes %s on every interface, want 127.0.0.1 only", name, strings.TrimSpace(string(text)))
			}
		}
	}
	var members []string
	for name, s := range cfg.Services {
		if strings.Contains(s.Image, "etcd") {
			members = append(members, name)
		}
	}
	slices.Sort(members)
	if !slices.Equal(members, []string{"etcd1", "etcd2", "etcd3"}) {
		t.Fatalf("etcd services %v, want etcd1, etcd2 and etcd3", members)
	}
	for _, m := range members {
		if ic := cfg.Services[m].Environment["ETCD_INITIAL_CLUSTER"]; strings.Count(ic, "=http://") != 3 {
			t.Errorf("%s's initial cluster %q, want all three members", m, ic)
		}
	}
	gw, ok := cfg.Services["fencegw"]
	if !ok {
		t.Fatal("no fencegw service")
	}
	if e := gw.Environment["FENCEGW_ETCD"]; e != "etcd1:2379,etcd2:2379,etcd3:2379" {
		t.Errorf("the gateway's etcd endpoints %q, want the three members", e)
	}
	listen := gw.Environment["FENCEGW_LISTEN"]
	for _, s := range []string{"prometheus", "grafana"} {
		if _, ok := cfg.Services[s]; !ok {
			t.Errorf("no %s service", s)
		}
	}
	var prom struct {
		ScrapeConfigs []struct {
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	b, err := os.ReadFile("prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &prom); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	_, port, _ := strings.Cut(listen, ":")
	if len(prom.ScrapeConfigs) != 1 || prom.ScrapeConfigs[0].MetricsPath != "/metrics" ||
		len(prom.ScrapeConfigs[0].StaticConfigs) != 1 || !slices.Equal(prom.ScrapeConfigs[0].StaticConfigs[0].Targets, []string{"fencegw:" + port}) {
		t.Errorf("prometheus scrapes %+v, want fencegw:%s/metrics", prom.ScrapeConfigs, port)
	}
}

// dashboard is the part of the Grafana dashboard the test reads.
type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// TestDashboardShowsWhatTheGatewayExports: the panels come in the book's
// order, and after a gateway has seen each event a panel counts (a write,
// a stale write, a renewal of a lost lease, a lock that stayed held, a
// release), every series a panel queries is in its /metrics, with the
// label values the queries match.
func TestDashboardShowsWhatTheGatewayExports(t *testing.T) {
	b, err := os.ReadFile("grafana/dashboards/fencegw.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, p := range d.Panels {
		titles = append(titles, p.Title)
	}
	want := []string{"Fence rejections", "Lease renew failures", "Lock hold time", "Lock acquisition failures", "Write latency"}
	if !slices.Equal(titles, want) {
		t.Fatalf("panels %q, want %q", titles, want)
	}

	gw := testgw.Start(t, testgw.Options{Policy: "../testdata/demo/policy.yaml", Migrations: "../testdata/demo/migrations", MigrationsTable: "demo_schema_migrations"})
	testgw.Run(t, gw.Node.RunHoldTimes)
	ctx := t.Context()
	c := client.New(gw.URL)
	debit := map[string]any{"account": "acct-1", "amount_cents": 1}
	first, err := c.Acquire(ctx, "account/acct-1", client.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Write(ctx, "debit", debit); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "account/acct-1", client.AcquireOptions{TTL: 30 * time.Second}); err == nil {
		t.Fatal("a second lease on a held lock was granted")
	}
	oldToken, oldID := first.Token(), first.ID()
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(gw.URL+"/v1/leases/"+oldID+"/keepalive", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	second, err := c.Acquire(ctx, "account/acct-1", client.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Release(context.Background())
	if _, err := second.Write(ctx, "debit", debit); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(ctx, oldToken, "debit", debit); err == nil {
		t.Fatal("the released lease's token wrote after a newer one")
	}

	selector := regexp.MustCompile(`(fencegw_[a-z_]+)(\{[^}]*\})?`)
	matcher := regexp.MustCompile(`([a-z_]+)="([^"]*)"`)
	var metrics string
	if !testenv.WaitFor(30*time.Second, func() bool {
		metrics = scrape(t, gw.URL)
		return strings.Contains(metrics, "fencegw_lease_hold_seconds_count 1")
	}) {
		t.Fatalf("the release's hold time was never observed:\n%s", grep(metrics, "fencegw_lease_hold"))
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, m := range selector.FindAllStringSubmatch(tg.Expr, -1) {
				lines := grep(metrics, m[1])
				for _, lv := range matcher.FindAllStringSubmatch(m[2], -1) {
					lines = grep(lines, lv[0])
				}
				if lines == "" {
					t.Errorf("panel %q queries %s%s: not in the gateway's /metrics", p.Title, m[1], m[2])
				}
			}
		}
	}
}

func scrape(t *testing.T, base string) string {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// grep keeps the lines of text that contain s and are samples, not
// comments.
func grep(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
