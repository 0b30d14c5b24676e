package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/internal/devserver/pgcluster"
	"github.com/fencegw/fencegw/internal/harness/testcerts"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// nonLoopbackIP is an address of this machine that is not loopback: the
// host a warning about plaintext must name.
func nonLoopbackIP(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	t.Skip("this machine has no IPv4 address but loopback: a host that is not loopback cannot be reached")
	return nil
}

// TestPostgresTLS: a throwaway cluster serving TLS with a test CA; the
// commands reach it with sslmode=verify-full, and one given another CA is
// refused before it writes anything. serve, reaching it through an
// address of this machine that is not loopback, warns when the
// connection is not encrypted (naming the host, never the password) or
// when sslmode would let it fall back to plaintext, and not with
// verify-full, nor over loopback.
func TestPostgresTLS(t *testing.T) {
	ctx := t.Context()
	ip := nonLoopbackIP(t)
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "pg CA")
	certFile, keyFile := ca.Server(t, "127.0.0.1", "localhost", ip.String()).Write(t, dir, "server")
	caFile := ca.WriteCA(t, dir, "ca.crt")
	otherCA := testcerts.NewCA(t, "another CA").WriteCA(t, dir, "other-ca.crt")
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	pg, err := pgcluster.Start(startCtx, pgcluster.Options{Settings: map[string]string{"fsync": "off"}, TLS: &pgcluster.TLS{CertFile: certFile, KeyFile: keyFile}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go forward(ln, pg.Address())
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	remote := func(query string) string {
		return "postgres://postgres:pw-never-logged-3e9@" + net.JoinHostPort(ip.String(), port) + "/postgres?" + query
	}
	verified := remote("sslmode=verify-full&sslrootcert=" + caFile)

	err = execute(ctx, io.Discard, "migrate", "--database-url", remote("sslmode=verify-full&sslrootcert="+otherCA), "up")
	if err == nil || !strings.Contains(err.Error(), "x509: certificate signed by unknown authority") {
		t.Fatalf("migrate up with another CA = %v, want x509's unknown authority", err)
	}
	var schema *string
	if err := queryRow(ctx, verified, "SELECT to_regnamespace('fencegw')::text", &schema); err != nil || schema != nil {
		t.Fatalf("after the refused migrate: schema fencegw %v, %v; want none", schema, err)
	}
	for _, args := range [][]string{
		{"migrate", "--database-url", verified, "up"},
		{"migrate", "--database-url", verified, "--dir", "../../testdata/demo/migrations", "--table", "demo_schema_migrations", "up"},
	} {
		if err := execute(ctx, io.Discard, args...); err != nil {
			t.Fatalf("migrate with verify-full: %v", err)
		}
	}

	const warning = "PostgreSQL without TLS to a host that is not loopback"
	for _, tc := range []struct {
		name, url string
		warns     string // "": no warning; else what it names
	}{
		{"verify-full", verified, ""},
		{"not encrypted", remote("sslmode=disable"), net.JoinHostPort(ip.String(), port)},
		{"prefer: encrypted, but may fall back", remote("sslmode=prefer"), ip.String()},
		{"loopback, not encrypted", strings.Replace(pg.URL(), "postgres@", "postgres:pw-never-logged-3e9@", 1), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := serveConfigFor(t, tc.url, "../../testdata/demo/policy.yaml")
			var log testenv.Buffer
			cfg.logOut = &log
			addr, stop := serveInBackground(t, cfg)
			if code := getStatus(t, "http://"+addr+"/readyz"); code != http.StatusOK {
				t.Errorf("readyz = %d, want 200", code)
			}
			if err := stop(); err != nil {
				t.Fatalf("serve: %v", err)
			}
			logs := log.String()
			var line string
			for l := range strings.Lines(logs) {
				if strings.Contains(l, warning) {
					line = l
				}
			}
			switch {
			case strings.Contains(logs, "pw-never-logged"):
				t.Errorf("the log holds the database password:\n%s", logs)
			case tc.warns == "" && line != "":
				t.Errorf("warned: %s", line)
			case tc.warns != "" && (!strings.Contains(line, "level=WARN") || !strings.Contains(line, tc.warns)):
				t.Errorf("want a warning naming %s; log:\n%s", tc.warns, logs)
			}
		})
	}
}

func queryRow(ctx context.Context, url, sql string, dest any) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.QueryRow(ctx, sql).Scan(dest)
}

// TestPlaintextPostgres: which hosts serve warns about: the address of a
// connection that is not encrypted, unless loopback; and the hosts that
// sslmode lets fall back to plaintext (allow, prefer), unless they stay on
// this machine (a unix socket, localhost, a loopback address).
func TestPlaintextPostgres(t *testing.T) {
	remote := &net.TCPAddr{IP: net.ParseIP("10.0.0.5"), Port: 5432}
	loopback := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5432}
	socket := &net.UnixAddr{Name: "/run/postgresql/.s.PGSQL.5432", Net: "unix"}
	for _, tc := range []struct {
		name, url string
		addr      net.Addr
		encrypted bool
		want      []string
	}{
		{"disable, to another machine", "postgres://u@db.example/x?sslmode=disable", remote, false, []string{"10.0.0.5:5432"}},
		{"disable, a name that is loopback", "postgres://u@db.example/x?sslmode=disable", loopback, false, nil},
		{"disable, to loopback", "postgres://u@127.0.0.1/x?sslmode=disable", loopback, false, nil},
		{"prefer, encrypted", "postgres://u@db.example/x?sslmode=prefer", remote, true, []string{"db.example"}},
		{"prefer, not encrypted", "postgres://u@db.example/x?sslmode=prefer", remote, false, []string{"10.0.0.5:5432"}},
		{"allow, encrypted", "postgres://u@db.example/x?sslmode=allow", remote, true, []string{"db.example"}},
		{"require", "postgres://u@db.example/x?sslmode=require", remote, true, nil},
		{"prefer, localhost", "postgres://u@localhost/x?sslmode=prefer", loopback, true, nil},
		{"prefer, ::1", "postgres://u@[::1]/x?sslmode=prefer", loopback, true, nil},
		{"a unix socket", "host=/run/postgresql user=u sslmode=disable", socket, false, nil},
		{"prefer, two hosts, one loopback", "postgres://u@a.example,127.0.0.1/x?sslmode=prefer", remote, true, []string{"a.example"}},
	} {
		cfg, err := pgconn.ParseConfig(tc.url)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, why := plaintextPostgres(cfg, tc.addr, tc.encrypted)
		if !slices.Equal(got, tc.want) || (len(got) > 0) != (why != "") {
			t.Errorf("%s: hosts %q, why %q; want %q", tc.name, got, why, tc.want)
		}
	}
}
