package torture

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
)

// With --wire, part of the workers' writes go through the gateways' SQL
// front (serve --pg-listen) as an application's own transaction would:
// BEGIN, SET LOCAL fencegw.tokens, the append's statements as SQL, COMMIT
// (workerwire.go). The policy then declares a client, torture, for every
// caller: its sessions run as torture_app, a role with the torture
// schema's tables and nothing of fencegw's but USAGE; its bearer key, in a
// file of the run, is every worker's and the nemesis's HTTP credential
// and the front's password. The control (--unsafe-no-fence) sends the same
// statements without the fence: the checker must find the stale writes.

const (
	wireClient = "torture"
	wireRole   = "torture_app"
)

// wire is a run's SQL front setup.
type wire struct {
	keyFile string // the client's bearer key
	db      string // the database the fronts serve
}

// setUpWire makes the client's key (in dir) and its role in dbURL's
// database, and returns the policy's clients section.
func setUpWire(ctx context.Context, dir, dbURL string) (*wire, string, error) {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	key := hex.EncodeToString(b)
	w := &wire{keyFile: filepath.Join(dir, "bearer")}
	if err := os.WriteFile(w.keyFile, []byte(key), 0o600); err != nil {
		return nil, "", err
	}
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return nil, "", err
	}
	w.db = cfg.Database
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, "", err
	}
	defer conn.Close(context.Background())
	for _, sql := range []string{
		"CREATE ROLE " + wireRole + " LOGIN",
		"GRANT USAGE ON SCHEMA torture, fencegw TO " + wireRole,
		"GRANT SELECT, INSERT, UPDATE ON torture.log, torture.balances TO " + wireRole,
		"GRANT USAGE ON SEQUENCE torture.log_id_seq TO " + wireRole,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return nil, "", fmt.Errorf("torture: the SQL front's role: %s: %w", sql, err)
		}
	}
	sum := sha256.Sum256([]byte(key))
	clients := fmt.Sprintf("clients:\n  %s:\n    token_sha256: %s\n    operations: [\"*\"]\n    leases: [\"*\"]\n    sql_role: %s\n    sql_resources: [res, strict]\n",
		wireClient, hex.EncodeToString(sum[:]), wireRole)
	return w, clients, nil
}
