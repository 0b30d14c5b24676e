package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// adminTimeout bounds each CREATE/DROP DATABASE.
const adminTimeout = 30 * time.Second

// NewDatabase creates an empty database with a unique name
// (fencegw_test_<hex>), drops it WITH (FORCE) when the test ends, and
// returns its URL. Each test gets its own so tests can run in parallel and
// leave nothing behind.
func NewDatabase(t testing.TB) string {
	t.Helper()
	e, err := get()
	if err != nil {
		t.Fatal(err)
	}
	name := "fencegw_test_" + randomHex(8)
	dbURL, err := urlForDatabase(e.adminURL, name)
	if err != nil {
		t.Fatalf("testenv: new database: %v", err)
	}
	ident := pgx.Identifier{name}.Sanitize()

	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	if err := adminExec(ctx, e.adminURL, "CREATE DATABASE "+ident); err != nil {
		t.Fatalf("testenv: new database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		// FORCE terminates connections the test leaked, such as an
		// unclosed pool, which would otherwise block the drop.
		if err := adminExec(ctx, e.adminURL, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			t.Errorf("testenv: drop database %s: %v", name, err)
		}
	})
	return dbURL
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails, per crypto/rand docs
	return hex.EncodeToString(b)
}

// urlForDatabase swaps the database in a URL-form connection string,
// keeping credentials and query parameters.
func urlForDatabase(adminURL, db string) (string, error) {
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", fmt.Errorf("url for database: %w", err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return "", errors.New("url for database: admin URL must be postgres://... (keyword=value form is not supported)")
	}
	u.Path, u.RawPath = "/"+db, ""
	return u.String(), nil
}

// adminExec runs one statement on a fresh connection. CREATE/DROP DATABASE
// cannot run in a transaction, and a connection per call keeps no shared
// state between parallel tests.
func adminExec(ctx context.Context, adminURL, sql string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("admin exec: connect: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("admin exec %q: %w", sql, err)
	}
	return nil
}

// checkAdminURL fails early, with a clear cause, for a URL that NewDatabase
// could not use.
func checkAdminURL(ctx context.Context, adminURL string) error {
	if _, err := urlForDatabase(adminURL, "x"); err != nil {
		return fmt.Errorf("check admin url: %w", err)
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("check admin url: %w", err)
	}
	defer conn.Close(context.Background())
	var canCreate bool
	err = conn.QueryRow(ctx, "SELECT rolsuper OR rolcreatedb FROM pg_roles WHERE rolname = current_user").Scan(&canCreate)
	if err != nil {
		return fmt.Errorf("check admin url: %w", err)
	}
	if !canCreate {
		return errors.New("check admin url: role may not CREATE DATABASE")
	}
	return nil
}
