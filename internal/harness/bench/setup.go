package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/kek"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/schema"
)

// Names of the bench workload in Config.Dir.
const (
	operationName  = "add"
	migrationTable = "bench_schema_migrations"
)

// setupTimeout bounds migrations and connecting to etcd and PostgreSQL.
const setupTimeout = time.Minute

// env is what every cell shares: the workload and, for the in-process
// gateway, the token authority.
type env struct {
	cfg           Config
	work          workload
	pol           *policy.Policy
	etcd          *clientv3.Client // nil with an external gateway
	auth          *authority.Etcd
	kekFile       string // the KEK file, also the replicas'
	ownKEK        bool   // made for the run: close removes it
	schemaVersion uint
	// pgbench is the yardstick's binary, "" when it does not run
	// (pgbenchNote says why).
	pgbench, pgbenchNote string
	// wrk is wrk's path with Config.Wrk.
	wrk string
}

// setup migrates the gateway's and the bench's schemas (a no-op when they
// are current), loads the policy and connects to etcd.
func setup(ctx context.Context, cfg Config) (*env, error) {
	var wrk string
	if cfg.Wrk {
		var err error
		if wrk, err = findWrk(cfg); err != nil {
			return nil, err
		}
	}
	if err := schema.Up(cfg.DatabaseURL, schema.Gateway(), schema.Dir(filepath.Join(cfg.Dir, "migrations"), migrationTable)); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	pol, err := policy.Load(filepath.Join(cfg.Dir, "policy.yaml"))
	if err != nil {
		return nil, err
	}
	for _, r := range pol.Kinds {
		if cfg.NoCoalesce {
			r.Coalesce, r.GroupCommit = false, nil
		}
		if cfg.NoGroupCommit {
			off := false
			r.GroupCommit = &off
		}
	}
	work, err := newWorkload(pol, operationName)
	if err != nil {
		return nil, err
	}
	version, err := schema.Latest(schema.Gateway())
	if err != nil {
		return nil, err
	}
	e := &env{cfg: cfg, work: work, pol: pol, schemaVersion: version, wrk: wrk}
	keks, err := e.keks()
	if err != nil {
		return nil, err
	}
	dial := cfg.DialEtcd
	if dial == nil {
		dial = func(context.Context) (*clientv3.Client, error) { return authority.Dial(cfg.EtcdEndpoints) }
	}
	if e.etcd, err = dial(ctx); err != nil {
		e.close()
		return nil, fmt.Errorf("bench: etcd: %w", err)
	}
	e.auth = authority.NewEtcd(e.etcd, keks)
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	if _, err := e.auth.Revision(ctx); err != nil {
		e.close()
		return nil, fmt.Errorf("bench: etcd at %v: %w", cfg.EtcdEndpoints, err)
	}
	e.pgbench, e.pgbenchNote = yardstick(ctx, cfg, work)
	return e, nil
}

// yardstick finds pgbench for the run, or says why it does not run.
func yardstick(ctx context.Context, cfg Config, work workload) (bin, note string) {
	if cfg.NoPgbench {
		return "", "off (--no-pgbench)"
	}
	if len(work.op.Statements) != 1 || strings.Join(strings.Fields(work.op.Statements[0].SQL), " ") != pgbenchWorkload {
		return "", "skipped: it knows only testdata/bench's add operation"
	}
	bin, err := findPgbench(ctx)
	if err != nil {
		return "", "skipped: " + err.Error()
	}
	return bin, "pgbench -M prepared, the fence and the add in one statement, one connection per client"
}

func (e *env) close() {
	if e.etcd != nil {
		_ = e.etcd.Close()
	}
	if e.ownKEK {
		_ = os.Remove(e.kekFile)
	}
}

// keks reads Config.KEKFile, or makes the run's own KEK file.
func (e *env) keks() (*kek.Ring, error) {
	e.kekFile = e.cfg.KEKFile
	if e.kekFile == "" {
		f, err := os.CreateTemp("", "fencegw-bench-*.kek") // mode 0600
		if err != nil {
			return nil, fmt.Errorf("bench: a KEK file: %w", err)
		}
		e.kekFile, e.ownKEK = f.Name(), true
		_, err = f.Write(kek.New())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			e.close()
			return nil, fmt.Errorf("bench: a KEK file: %w", err)
		}
	}
	data, err := os.ReadFile(e.kekFile)
	if err != nil {
		e.close()
		return nil, fmt.Errorf("bench: --token-kek-file: %w", err)
	}
	ring, err := kek.Parse(data)
	if err != nil {
		e.close()
		return nil, fmt.Errorf("bench: --token-kek-file %s: %w", e.kekFile, err)
	}
	return ring, nil
}

// newPool returns a pgx pool of at most size connections to databaseURL,
// whatever pool_max_conns the URL says: both paths of a cell must get the
// same.
func newPool(ctx context.Context, databaseURL string, size int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("bench: database URL: %w", err)
	}
	cfg.MaxConns = int32(size)
	fence.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: database: %w", err)
	}
	return pool, nil
}

// serverFacts describes the PostgreSQL server: its version and the
// settings that decide what a commit costs.
func serverFacts(ctx context.Context, databaseURL string) (Server, error) {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return Server{}, fmt.Errorf("bench: database: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var s Server
	err = conn.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('fsync'), current_setting('synchronous_commit')").
		Scan(&s.Version, &s.Fsync, &s.SynchronousCommit)
	if err != nil {
		return Server{}, fmt.Errorf("bench: database: %w", err)
	}
	return s, nil
}
