package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/fencegw/fencegw/internal/devserver/pgcluster"
	"github.com/fencegw/fencegw/tokens"
)

// pgbenchStatement is the yardstick's one-statement transaction: the
// fence and the bench's add in one statement, as PostgreSQL runs it at
// its best for clients that commit every write (one connection each,
// prepared, no round trip but the statement's). It is the bench policy's
// add operation; another workload gets no yardstick.
const pgbenchStatement = `WITH f AS (SELECT fencegw.fence('acct/' || :id, %d, %d, false))
UPDATE bench.accounts SET balance = balance + :amount WHERE id = :id AND EXISTS (SELECT 1 FROM f);`

// pgbenchWorkload is the add operation's SQL the yardstick stands for, as
// the policy compiles it.
const pgbenchWorkload = "UPDATE bench.accounts SET balance = balance + $1 WHERE id = $2"

// findPgbench returns the pgbench of the PostgreSQL installation, or why
// there is none.
func findPgbench(ctx context.Context) (string, error) {
	dir, err := pgcluster.FindBinDir(ctx, "")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "pgbench")
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("no pgbench beside the server binaries: %w", err)
	}
	return path, nil
}

// pgbenchScript is the script of distribution d: the same accounts the
// other paths write, drawn by pgbench's own generator.
func pgbenchScript(d Dist, tok tokens.Token) string {
	pick := fmt.Sprintf(`\set id random(1, %d)`, Accounts)
	switch d {
	case Hot:
		pick = `\set id 1`
	case Zipf:
		pick = fmt.Sprintf(`\set id random_zipfian(1, %d, %g)`, Accounts, zipfS)
	}
	return pick + "\n" + fmt.Sprintf(`\set amount %d`, Amount) + "\n" + fmt.Sprintf(pgbenchStatement, tok.Epoch, tok.Revision) + "\n"
}

// runPgbench measures the yardstick for one cell: clients connections,
// pgbench -M prepared, for the warmup and the duration (whole seconds:
// pgbench counts no finer), each transaction logged so that the warmup
// can be cut off and the latencies are exact.
func runPgbench(ctx context.Context, bin, dbURL string, clients int, d Dist, tok tokens.Token, w window) (Path, error) {
	return runPgbenchScript(ctx, bin, dbURL, clients, pgbenchScript(d, tok), w)
}

// runPgbenchScript runs text, a pgbench script, as runPgbench does.
func runPgbenchScript(ctx context.Context, bin, dbURL string, clients int, text string, w window) (Path, error) {
	dir, err := os.MkdirTemp("", "fencegw-pgbench-")
	if err != nil {
		return Path{}, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "write.sql")
	if err := os.WriteFile(script, []byte(text), 0o600); err != nil {
		return Path{}, err
	}
	secs := int(math.Ceil((w.warmup + w.duration).Seconds()))
	threads := min(clients, runtime.GOMAXPROCS(0))
	cmd := exec.CommandContext(ctx, bin, "--no-vacuum", "--protocol=prepared", "--file="+script,
		"--client="+strconv.Itoa(clients), "--jobs="+strconv.Itoa(threads), "--time="+strconv.Itoa(max(secs, 1)),
		"--random-seed=1", "--log", "--log-prefix="+filepath.Join(dir, "tx"), dbURL)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return Path{}, ctx.Err()
		}
		msg := strings.TrimSpace(stderr.String())
		return Path{Errors: map[string]int64{"pgbench": 1}, FirstError: fmt.Sprintf("pgbench: %v: %s", err, lastLine(msg))}, nil
	}
	p, err := readPgbenchLogs(dir, w.warmup)
	if err == nil && p.Writes == 0 && p.WarmupWrites == 0 && p.ErrorCount() == 0 {
		// pgbench can exit 0 having run nothing (its clients still
		// connecting when --time ran out): say so, with what it said.
		p.Errors = map[string]int64{"pgbench-none": 1}
		p.FirstError = fmt.Sprintf("pgbench: no transaction completed in %ds on %d connections: %s", max(secs, 1), clients, lastLine(strings.TrimSpace(stderr.String())))
	}
	return p, err
}

// readPgbenchLogs reads the per-transaction logs of one run (a file per
// thread: client, transaction, latency µs, script, end s, end µs) and
// measures what ended from warmup after the first transaction ended.
func readPgbenchLogs(dir string, warmup time.Duration) (Path, error) {
	files, err := filepath.Glob(filepath.Join(dir, "tx.*"))
	if err != nil || len(files) == 0 {
		return Path{}, fmt.Errorf("bench: pgbench wrote no transaction log (%v)", err)
	}
	var all []pgbenchTx
	first := time.Time{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return Path{}, err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			t, err := parsePgbenchLine(sc.Text())
			if err != nil {
				fh.Close()
				return Path{}, fmt.Errorf("bench: pgbench log %s: %w", filepath.Base(f), err)
			}
			if first.IsZero() || t.end.Before(first) {
				first = t.end
			}
			all = append(all, t)
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return Path{}, err
		}
	}
	from := first.Add(warmup)
	var lat []time.Duration
	var p Path
	last := from
	for _, t := range all {
		if t.end.Before(from) {
			p.WarmupWrites++
			continue
		}
		if t.failed {
			if p.Errors == nil {
				p.Errors = map[string]int64{}
			}
			if p.Errors["pgbench-failed"]++; p.FirstError == "" {
				p.FirstError = "pgbench: a transaction failed (PostgreSQL aborted it: a deadlock or a serialization failure)"
			}
			continue
		}
		lat = append(lat, t.lat)
		if t.end.After(last) {
			last = t.end
		}
	}
	p.Writes = int64(len(lat))
	p.Latency = summarize(lat)
	if el := last.Sub(from); el > 0 {
		p.TxPerSec = float64(p.Writes) / el.Seconds()
	}
	return p, nil
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// libpqURL is databaseURL without the settings only pgx knows (its pool's,
// its statement caches'), which libpq would refuse.
func libpqURL(databaseURL string) string {
	u, err := url.Parse(databaseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return databaseURL // a key=value string: passed as it is
	}
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") || strings.HasSuffix(k, "_cache_capacity") || k == "default_query_exec_mode" {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// pgbenchTx is one line of pgbench's transaction log.
type pgbenchTx struct {
	end time.Time
	lat time.Duration
	// failed: PostgreSQL aborted the transaction (a deadlock or a
	// serialization failure; pgbench logs "failed" for its latency). The
	// batched ceiling's transactions write several accounts in random
	// order, as the gateway, which locks them in one order, never does.
	failed bool
}

// parsePgbenchLine reads "client transaction latency_us script end_s
// end_us" (pgbench --log, without --sampling-rate or retries), the
// latency "failed" for a transaction PostgreSQL aborted.
func parsePgbenchLine(line string) (pgbenchTx, error) {
	fields := strings.Fields(line)
	if len(fields) < 6 {
		return pgbenchTx{}, fmt.Errorf("%q: want six fields", clipLine(line))
	}
	failed := fields[2] == "failed"
	if failed {
		fields[2] = "0"
	}
	lat, err1 := strconv.ParseInt(fields[2], 10, 64)
	s, err2 := strconv.ParseInt(fields[4], 10, 64)
	us, err3 := strconv.ParseInt(fields[5], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil || lat < 0 || us < 0 || us >= 1e6 || s < 0 {
		return pgbenchTx{}, fmt.Errorf("%q: want a latency, seconds and microseconds", clipLine(line))
	}
	return pgbenchTx{end: time.Unix(s, us*1000), lat: time.Duration(lat) * time.Microsecond, failed: failed}, nil
}

func clipLine(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
