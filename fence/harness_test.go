package fence_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/guard"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/schema"
	"github.com/fencegw/fencegw/tokens"
)

// db is a fresh database with the gateway's schema and the demo
// application, a Store on it, and the demo policy (extra operations may
// be added to it).
type db struct {
	t     testing.TB
	pool  *pgxpool.Pool
	store *fence.Store
	pol   *policy.Policy
	src   string
}

func newDB(t *testing.T, extraOperations ...string) *db { return newBenchDB(t, extraOperations...) }

// newBenchDB is newDB for benchmarks too.
func newBenchDB(t testing.TB, extraOperations ...string) *db {
	t.Helper()
	url := testenv.NewDatabase(t)
	if err := schema.Up(url, schema.Gateway(), schema.Dir("../testdata/demo/migrations", "demo_schema_migrations")); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	for _, op := range extraOperations {
		text = insertOperation(text, op)
	}
	pol, err := policy.Parse("demo.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	pool, err := fence.NewPool(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	store, err := fence.New(fence.Config{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	return &db{t: t, pool: pool, store: store, pol: pol, src: text}
}

// insertOperation adds an operation's YAML under the policy's operations.
func insertOperation(src, op string) string {
	const at = "\noperations:\n"
	i := strings.Index(src, at) + len(at)
	return src[:i] + op + src[i:]
}

// write builds a write of the named operation from a JSON body.
func (d *db) write(op, body string, toks ...tokens.Token) fence.Write {
	d.t.Helper()
	o := d.pol.Operations[op]
	if o == nil {
		d.t.Fatalf("no operation %s", op)
	}
	args, err := o.DecodeArgs([]byte(body))
	if err != nil {
		d.t.Fatal(err)
	}
	keys, err := o.Resources(nil, args)
	if err != nil {
		d.t.Fatal(err)
	}
	return fence.Write{Operation: o, Args: args, Resources: keys, Tokens: toks}
}

// apply applies writes as one request.
func (d *db) apply(key *fence.IdempotencyKey, writes ...fence.Write) (fence.Response, error) {
	d.t.Helper()
	req, err := fence.NewRequest(writes, key)
	if err != nil {
		return fence.Response{}, err
	}
	return d.store.Apply(context.Background(), req)
}

func (d *db) balance(account string) int64 {
	d.t.Helper()
	var b int64
	if err := d.pool.QueryRow(context.Background(), "SELECT balance_cents FROM demo.accounts WHERE id = $1", account).Scan(&b); err != nil {
		d.t.Fatal(err)
	}
	return b
}

func (d *db) fence(resource string) string {
	d.t.Helper()
	var f string
	err := d.pool.QueryRow(context.Background(),
		"SELECT coalesce((SELECT epoch || ':' || revision || '#' || writes FROM fencegw.fences WHERE resource = $1), 'none')", resource).Scan(&f)
	if err != nil {
		d.t.Fatal(err)
	}
	return f
}

// state digests the business tables and the fences, so a test can prove
// a refused request changed nothing at all.
func (d *db) state() string {
	d.t.Helper()
	var s string
	err := d.pool.QueryRow(context.Background(), `SELECT
		(SELECT md5(string_agg(id || '=' || balance_cents, ',' ORDER BY id)) FROM demo.accounts) || ' ' ||
		(SELECT count(*) || '/' || coalesce(max(id), 0) FROM demo.write_log) || ' ' ||
		(SELECT coalesce(md5(string_agg(resource || '=' || epoch || ':' || revision || '#' || writes, ',' ORDER BY resource)), 'none') FROM fencegw.fences)`).Scan(&s)
	if err != nil {
		d.t.Fatal(err)
	}
	return s
}

// installGuard puts the guard triggers of d's policy on its tables.
func (d *db) installGuard() {
	d.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, d.pool.Config().ConnConfig.ConnString())
	if err != nil {
		d.t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := guard.Install(ctx, conn, d.pol); err != nil {
		d.t.Fatal(err)
	}
}

func tok(rev int64) tokens.Token { return tokens.Token{Epoch: 1, Revision: rev} }
