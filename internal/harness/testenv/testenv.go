package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/devserver/etcdserver"
	"github.com/fencegw/fencegw/internal/devserver/pgcluster"
)

// DatabaseURLEnv names the variable holding an existing server's admin URL
// (URL form, a superuser able to CREATE DATABASE); unset starts a pgcluster.
const DatabaseURLEnv = "FENCEGW_TEST_DATABASE_URL"

// startTimeout bounds initdb plus server and etcd startup; a cold initdb
// on a loaded CI machine can take several seconds.
const startTimeout = 2 * time.Minute

// env is the shared environment of the running test binary.
type env struct {
	adminURL      string
	etcdEndpoints []string
}

// The environment starts on first use, not in Run, so test binaries whose
// selected tests need no server (unit tests, fuzz workers) start none.
var (
	running  atomic.Bool
	mu       sync.Mutex
	current  *env
	startErr error
	stopAll  func() error
)

// Run runs the tests, then stops whatever servers they started, and returns
// the exit code. Call it from TestMain: os.Exit(testenv.Run(m)). Servers
// start when a test first asks for one; if they cannot, that test fails
// with the reason (and so does every later one): a missing server never
// passes as a skip.
func Run(m *testing.M) int {
	if !running.CompareAndSwap(false, true) {
		fmt.Fprintln(os.Stderr, "testenv: Run called twice in one test binary")
		return 1
	}
	defer running.Store(false)
	code := m.Run()

	mu.Lock()
	stop := stopAll
	current, stopAll = nil, nil
	mu.Unlock()
	if stop != nil {
		if err := stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
			return 1
		}
	}
	return code
}

// start brings up both servers. stop is always non-nil and releases
// whatever did start, so it is safe to call after an error.
func start(ctx context.Context) (_ *env, stop func() error, err error) {
	var stops []func() error
	stop = func() error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("stop test servers: %w", err)
		}
		return nil
	}

	e := &env{}
	if e.adminURL = os.Getenv(DatabaseURLEnv); e.adminURL != "" {
		if err := checkAdminURL(ctx, e.adminURL); err != nil {
			return nil, stop, fmt.Errorf("$%s: %w", DatabaseURLEnv, err)
		}
	} else {
		pg, err := pgcluster.Start(ctx, pgcluster.Options{Settings: map[string]string{"fsync": "off"}})
		if err != nil {
			return nil, stop, fmt.Errorf("%w (or set $%s to an existing server's admin URL)", err, DatabaseURLEnv)
		}
		stops = append(stops, pg.Stop)
		e.adminURL = pg.URL()
	}

	etcd, err := etcdserver.Start(ctx, "")
	if err != nil {
		return nil, stop, err
	}
	stops = append(stops, etcd.Close)
	e.etcdEndpoints = etcd.Endpoints()
	return e, stop, nil
}

// get returns the shared environment, starting it on first use.
func get() (*env, error) {
	if !running.Load() {
		return nil, errors.New("testenv: not running; add func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) } to the package's tests")
	}
	mu.Lock()
	defer mu.Unlock()
	if current != nil || startErr != nil {
		return current, startErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	begin := time.Now()
	e, stop, err := start(ctx)
	if err != nil {
		startErr = fmt.Errorf("testenv: cannot start test servers after %s: %w", time.Since(begin).Round(time.Millisecond), err)
		if serr := stop(); serr != nil {
			startErr = errors.Join(startErr, serr)
		}
		return nil, startErr
	}
	current, stopAll = e, stop
	return current, nil
}

// AdminURL is the superuser URL of the shared server's postgres database.
// Tests should normally use NewDatabase instead. It panics outside Run.
func AdminURL() string {
	e, err := get()
	if err != nil {
		panic(err)
	}
	return e.adminURL
}

// EtcdEndpoints are the shared etcd's client URLs. It panics outside Run.
func EtcdEndpoints() []string {
	e, err := get()
	if err != nil {
		panic(err)
	}
	return append([]string(nil), e.etcdEndpoints...)
}
