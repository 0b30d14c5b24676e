package deploy

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// dockerBuild is the Dockerfile's build command, read from it so that the
// test builds what the image would hold.
var dockerBuild = regexp.MustCompile(`(?m)^RUN (go build .*)$`)

// imageBinary builds fencegw as the Dockerfile does, with REVISION
// 0123abc, and returns its path.
func imageBinary(t *testing.T) string {
	t.Helper()
	dockerfile, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := dockerBuild.FindSubmatch(dockerfile)
	if m == nil || !strings.Contains(string(dockerfile), "ENV CGO_ENABLED=0") {
		t.Fatal("the Dockerfile builds no static binary with go build")
	}
	bin := filepath.Join(t.TempDir(), "fencegw")
	// Through a shell, as Docker's RUN does: the flags are quoted.
	build := exec.Command("sh", "-c", strings.ReplaceAll(string(m[1]), "/out/fencegw", bin))
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "REVISION=0123abc") // the build argument
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", m[1], err, out)
	}
	return bin
}

// TestComposeServicesRun builds the binary as the Dockerfile does and runs
// each compose service's command, with its environment, against a test
// database and etcd (paths inside the image mapped to the repository's):
// the one-shot services succeed in order, token-kek makes a KEK file
// once and keeps it after, and the gateway becomes ready and stops
// cleanly on SIGTERM.
func TestComposeServicesRun(t *testing.T) {
	bin := imageBinary(t)
	// The image has no .git: its revision is the build argument's.
	if out, err := exec.Command(bin, "--version").Output(); err != nil || !strings.Contains(string(out), "revision 0123abc") {
		t.Fatalf("fencegw --version of the image's build = %q, %v; want the REVISION build argument in it", out, err)
	}

	var cfg composeConfig
	src, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(src, &cfg); err != nil {
		t.Fatal(err)
	}
	dbURL := testenv.NewDatabase(t)
	// The gateway's KEK volume holds the KEK of the test binary's etcd
	// already, as a volume would after the first up; a new one's is made.
	kekDir, newKEKDir := t.TempDir(), t.TempDir()
	if _, err := testenv.WriteKEKFile(kekDir); err != nil {
		t.Fatal(err)
	}
	kekVolume := kekDir
	repoPath := func(s string) string {
		return strings.NewReplacer("/etc/fencegw/demo", "../testdata/demo", "/var/lib/fencegw/kek", kekVolume).Replace(s)
	}
	run := func(service string, env map[string]string) *exec.Cmd {
		s, ok := cfg.Services[service]
		if !ok {
			t.Fatalf("no service %s", service)
		}
		var argv []string
		for _, a := range s.Command {
			argv = append(argv, repoPath(a))
		}
		cmd := exec.Command(bin, argv...)
		cmd.Env = append(os.Environ(), "FENCEGW_DATABASE_URL="+dbURL)
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		return cmd
	}
	// What the postgres image runs on its first start: the gateway's role.
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	pgEnv := []string{"PGHOST=" + u.Hostname(), "PGPORT=" + u.Port(), "POSTGRES_USER=" + u.User.Username(), "POSTGRES_DB=" + strings.TrimPrefix(u.Path, "/")}
	unset := exec.Command("sh", "postgres/10-gateway-role.sh")
	unset.Env = append(composeEnv(nil), pgEnv...)
	if out, err := unset.CombinedOutput(); err == nil || !strings.Contains(string(out), "FENCEGW_GATEWAY_PASSWORD") {
		t.Fatalf("the role script without FENCEGW_GATEWAY_PASSWORD: %v\n%s; want a refusal naming it (no password is built in)", err, out)
	}
	role := exec.Command("sh", "postgres/10-gateway-role.sh")
	role.Env = append(composeEnv(composePasswords), "PGHOST="+u.Hostname(), "PGPORT="+u.Port(), "POSTGRES_USER="+u.User.Username(), "POSTGRES_DB="+strings.TrimPrefix(u.Path, "/"))
	if out, err := role.CombinedOutput(); err != nil {
		t.Fatalf("deploy/postgres/10-gateway-role.sh: %v\n%s", err, out)
	}
	for _, service := range []string{"migrate", "migrate-demo", "guard", "grants"} {
		if out, err := run(service, nil).CombinedOutput(); err != nil {
			t.Fatalf("service %s: %v\n%s", service, err, out)
		}
	}
	kekFile := filepath.Join(newKEKDir, "token.kek")
	for _, dir := range []string{newKEKDir, newKEKDir, kekDir} {
		kekVolume = dir
		before, _ := os.ReadFile(kekFile)
		if out, err := run("token-kek", nil).CombinedOutput(); err != nil {
			t.Fatalf("service token-kek: %v\n%s", err, out)
		}
		if after, err := os.ReadFile(kekFile); err != nil || (before != nil && !bytes.Equal(before, after)) {
			t.Fatalf("token-kek on %s: its file %v, changed by a second run: %t", dir, err, before != nil)
		}
	}
	if fi, err := os.Stat(kekFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token-kek's file: %v, want readable by its owner only", err)
	}
	// The gateway as the compose file has it: as fencegw_gateway, with the
	// grants alone (this server takes any password).
	gateway := *u
	gateway.User = url.User("fencegw_gateway")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := map[string]string{}
	for k, v := range cfg.Services["fencegw"].Environment {
		env[k] = repoPath(v)
	}
	env["FENCEGW_LISTEN"] = addr // the container's 0.0.0.0:8080, on loopback here
	env["FENCEGW_ETCD"] = strings.Join(testenv.EtcdEndpoints(), ",")
	if !strings.HasPrefix(env["FENCEGW_DATABASE_URL"], "postgres://fencegw_gateway:") {
		t.Fatalf("the fencegw service connects as %q, want the least-privilege role fencegw_gateway", env["FENCEGW_DATABASE_URL"])
	}
	env["FENCEGW_DATABASE_URL"] = gateway.String()
	env["FENCEGW_SHUTDOWN_DELAY"] = "0s"
	gw := run("fencegw", env)
	var out bytes.Buffer
	gw.Stdout, gw.Stderr = &out, &out
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- gw.Wait() }()
	t.Cleanup(func() { _ = gw.Process.Kill() })
	ready := testenv.WaitFor(60*time.Second, func() bool {
		select {
		case err := <-exited:
			exited <- err
			return true
		default:
		}
		resp, err := http.Get(fmt.Sprintf("http://%s/readyz", addr))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if !ready {
		t.Fatalf("the fencegw service never became ready:\n%s", &out)
	}
	if err := gw.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("the fencegw service stopped early:\n%s", &out)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the fencegw service after SIGTERM: %v\n%s", err, &out)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the fencegw service did not stop after SIGTERM:\n%s", &out)
	}
}
