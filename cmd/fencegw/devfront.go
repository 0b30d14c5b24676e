package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/policy"
)

// dev with --pg-listen serves the SQL front too, for one client of its
// own: "demo", whose bearer key dev makes up and prints, and whose
// sessions run as demo_app, a role dev creates with what an application
// role has (the demo's tables, USAGE on fencegw) and nothing more. The
// demo's policy gets the client in a copy dev serves; with a client, the
// HTTP API asks for the key too. A demo policy that declares clients of
// its own is served as it is: its clients' sql_role are the operator's.

const (
	devClient = "demo"
	devRole   = "demo_app"
)

// devFront readies dev's policy and database for the SQL front and
// returns the client's key ("" when the demo's own clients are served);
// cleanup removes the policy's copy.
func devFront(ctx context.Context, cfg *serveConfig) (key string, cleanup func(), err error) {
	src, err := os.ReadFile(cfg.PolicyPath)
	if err != nil {
		return "", nil, err
	}
	pol, err := policy.Parse(cfg.PolicyPath, src)
	if err != nil {
		return "", nil, err
	}
	if pol.AuthRequired() {
		return "", func() {}, nil
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	key = hex.EncodeToString(b)
	sum := sha256.Sum256([]byte(key))
	dir, err := os.MkdirTemp("", "fencegw-dev-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	withClient := string(src) + fmt.Sprintf("\n# Added by fencegw dev --pg-listen: the SQL front's client.\nclients:\n  %s:\n    token_sha256: %s\n    operations: [\"*\"]\n    leases: [\"*\"]\n    sql_role: %s\n    sql_resources: [\"*\"]\n",
		devClient, hex.EncodeToString(sum[:]), devRole)
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte(withClient), 0o600); err != nil {
		cleanup()
		return "", nil, err
	}
	if err := devRoleGrants(ctx, cfg.DatabaseURL, pol); err != nil {
		cleanup()
		return "", nil, err
	}
	cfg.PolicyPath = path
	return key, cleanup, nil
}

// devRoleGrants creates demo_app, if it is not there, with the rights an
// application's role has on the schemas of the demo's guarded tables.
func devRoleGrants(ctx context.Context, dbURL string, pol *policy.Policy) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", devRole).Scan(&exists); err != nil {
		return err
	}
	statements := []string{"GRANT USAGE ON SCHEMA fencegw TO " + devRole}
	if !exists {
		statements = append([]string{"CREATE ROLE " + devRole + " LOGIN"}, statements...)
	}
	var schemas []string
	for _, g := range pol.Guarded {
		if s, _, ok := strings.Cut(g.Table, "."); ok && !slices.Contains(schemas, s) {
			schemas = append(schemas, s)
		}
	}
	for _, s := range schemas {
		q := pgx.Identifier{s}.Sanitize()
		statements = append(statements, "GRANT USAGE ON SCHEMA "+q+" TO "+devRole,
			"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "+q+" TO "+devRole,
			"GRANT USAGE ON ALL SEQUENCES IN SCHEMA "+q+" TO "+devRole)
	}
	for _, s := range statements {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("the SQL front's role %s: %s: %w", devRole, s, err)
		}
	}
	return nil
}

// frontSheet is the part of dev's cheat-sheet about the SQL front: its
// URL for dev's client, and a fenced transaction to try; and with key,
// the HTTP API's commands are sent with it.
func frontSheet(sheet, addr, key, dbURL string, demo bool) string {
	if key == "" {
		return sheet + fmt.Sprintf("SQL front     %s   (the policy's clients, with their sql_role: docs/sql-front.md)\n\n", addr)
	}
	db := ""
	if c, err := pgconn.ParseConfig(dbURL); err == nil {
		db = c.Database
	}
	front := url.URL{Scheme: "postgres", User: url.UserPassword(devClient, key), Host: addr, Path: "/" + db, RawQuery: "sslmode=disable"}
	sheet = strings.ReplaceAll(sheet, "curl -s ", "curl -s -H 'Authorization: Bearer "+key+"' ")
	tx := "  SET LOCAL fencegw.tokens = 'RESOURCE=1:NN:SIG';\n  -- the application's statements, as written\n"
	if demo {
		tx = "  SET LOCAL fencegw.tokens = 'account/acct-1=1:NN:SIG';\n  UPDATE demo.accounts SET balance_cents = balance_cents - 100 WHERE id = 'acct-1';\n"
	}
	return sheet + fmt.Sprintf(`SQL front, PostgreSQL's protocol, for client %s (its key is the HTTP API's now too: Authorization: Bearer %s):
  psql '%s'
Then, with a lease's token (replace 1:NN:SIG):
  BEGIN;
%s  COMMIT;

`, devClient, key, front.String(), tx)
}
