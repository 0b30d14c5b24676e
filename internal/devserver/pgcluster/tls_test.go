package pgcluster

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/testcerts"
)

// TestTLS: a cluster started with TLS files serves TLS with them, even
// from a key file others may read (PostgreSQL refuses one; the cluster
// uses a copy of its own); a client verifying it against their CA
// (sslmode=verify-full) connects, encrypted, and one given another CA is
// refused before it can say a word.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "pg CA")
	certFile, keyFile := ca.Server(t, "127.0.0.1", "localhost").Write(t, dir, "server")
	if err := os.Chmod(keyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	caFile := ca.WriteCA(t, dir, "ca.crt")
	otherCA := testcerts.NewCA(t, "another CA").WriteCA(t, dir, "other-ca.crt")
	c := startCluster(t, Options{Settings: testSettings, TLS: &TLS{CertFile: certFile, KeyFile: keyFile}})

	verified := strings.Replace(c.URL(), "sslmode=disable", "sslmode=verify-full&sslrootcert="+caFile, 1)
	if got := queryString(t, verified, "SELECT ssl::text FROM pg_stat_ssl WHERE pid = pg_backend_pid()"); got != "true" {
		t.Errorf("verify-full connection: pg_stat_ssl.ssl = %s, want true", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, strings.Replace(verified, caFile, otherCA, 1))
	if err == nil {
		conn.Close(ctx)
		t.Fatal("verify-full with another CA connected")
	}
	if !strings.Contains(err.Error(), "x509: certificate signed by unknown authority") {
		t.Errorf("verify-full with another CA: %v, want x509's unknown authority", err)
	}
}
