package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/schema"
	"github.com/fencegw/fencegw/tokens"
)

func TestParsePgbenchLine(t *testing.T) {
	tx, err := parsePgbenchLine("3 117 412 0 1764500000 250000")
	if err != nil || tx.lat != 412*time.Microsecond || !tx.end.Equal(time.Unix(1764500000, 250_000_000)) {
		t.Fatalf("a log line: %+v, %v", tx, err)
	}
	tx, err = parsePgbenchLine("1 1138 failed 0 1796157766 187129")
	if err != nil || !tx.failed || !tx.end.Equal(time.Unix(1796157766, 187_129_000)) {
		t.Fatalf("a failed transaction's line: %+v, %v", tx, err)
	}
	for _, bad := range []string{"", "1 2 3", "1 2 x 0 5 6", "1 2 3 0 5 1000000", "1 2 -3 0 5 6"} {
		if _, err := parsePgbenchLine(bad); err == nil {
			t.Errorf("%q: parsed, want an error", bad)
		}
	}
}

func FuzzParsePgbenchLine(f *testing.F) {
	f.Add("3 117 412 0 1764500000 250000")
	f.Add("0 0 0 0 0 0 extra")
	f.Add("1 1138 failed 0 1796157766 187129")
	f.Fuzz(func(t *testing.T, line string) {
		tx, err := parsePgbenchLine(line)
		if err == nil && (tx.lat < 0 || tx.end.Before(time.Unix(0, 0))) {
			t.Fatalf("%q: %+v", line, tx)
		}
	})
}

func TestLibpqURL(t *testing.T) {
	got := libpqURL("postgres://u@h:5432/db?sslmode=disable&pool_max_conns=8&statement_cache_capacity=0")
	if strings.Contains(got, "pool_") || strings.Contains(got, "statement_cache") || !strings.Contains(got, "sslmode=disable") {
		t.Fatalf("libpqURL = %s", got)
	}
	if kv := "host=h dbname=db"; libpqURL(kv) != kv {
		t.Fatalf("a key=value string changed: %s", libpqURL(kv))
	}
}

func TestPgbenchScript(t *testing.T) {
	for d, want := range map[Dist]string{Uniform: `random(1, 10000)`, Hot: `\set id 1`, Zipf: `random_zipfian(1, 10000, 1.1)`} {
		if s := pgbenchScript(d, tokens.Token{Epoch: 7, Revision: 42}); !strings.Contains(s, want) || !strings.Contains(s, "fencegw.fence('acct/' || :id, 7, 42, false)") {
			t.Errorf("%s script:\n%s", d, s)
		}
	}
}

// TestCeilingScript: k writes in one transaction, each drawing its own
// account, each the yardstick's fenced statement; a uniform draw's
// accounts ascend, as the gateway orders a group's writes, so that two
// transactions never deadlock; the hot and Zipfian draws are the
// yardstick's.
func TestCeilingScript(t *testing.T) {
	s := ceilingScript(Uniform, tokens.Token{Epoch: 7, Revision: 42}, 3)
	if !strings.HasPrefix(s, "BEGIN;\n") || !strings.HasSuffix(s, "COMMIT;\n") {
		t.Fatalf("not one transaction:\n%s", s)
	}
	draws := []string{`\set id0 random(1, 6666)`, `\set id1 least(:id0 + random(1, 6666), 10000)`, `\set id2 least(:id1 + random(1, 6666), 10000)`}
	for i := range 3 {
		id := ":id" + string(rune('0'+i))
		if !strings.Contains(s, draws[i]+"\n") || !strings.Contains(s, "fencegw.fence('acct/' || "+id+", 7, 42, false)") {
			t.Errorf("write %d missing or not drawing its own account, above the one before:\n%s", i, s)
		}
	}
	if n := strings.Count(s, "UPDATE bench.accounts"); n != 3 {
		t.Errorf("%d writes, want 3:\n%s", n, s)
	}
	if s := ceilingScript(Uniform, tokens.Token{Epoch: 7, Revision: 42}, 1); !strings.Contains(s, `\set id0 random(1, 10000)`+"\n") {
		t.Errorf("one write a transaction draws from every account, no further:\n%s", s)
	}
	if s := ceilingScript(Hot, tokens.Token{Epoch: 7, Revision: 42}, 2); !strings.Contains(s, `\set id1 1`+"\n") {
		t.Errorf("hot:\n%s", s)
	}
	if s := ceilingScript(Zipf, tokens.Token{Epoch: 7, Revision: 42}, 2); !strings.Contains(s, `\set id1 random_zipfian(1, 10000, 1.1)`) {
		t.Errorf("zipf:\n%s", s)
	}
}

// TestCeilingDoesNotDeadlock: the ceiling's transactions of many uniform
// writes, on several connections, run without PostgreSQL aborting one as
// a deadlock (k writes of random accounts in random order did, at every
// run of 64 clients' k).
func TestCeilingDoesNotDeadlock(t *testing.T) {
	bin, err := findPgbench(t.Context())
	if err != nil {
		t.Fatalf("no pgbench in the PostgreSQL installation the tests run: %v", err)
	}
	dbURL := testenv.NewDatabase(t)
	if err := schema.Up(dbURL, schema.Gateway(), schema.Dir("../../../testdata/bench/migrations", migrationTable)); err != nil {
		t.Fatal(err)
	}
	p, err := runPgbenchScript(t.Context(), bin, libpqURL(dbURL), 4, ceilingScript(Uniform, tokens.Token{Epoch: 1, Revision: 1}, 31), window{duration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if p.ErrorCount() != 0 || p.Writes == 0 {
		t.Fatalf("%d transactions, %d failed: %s", p.Writes, p.ErrorCount(), p.FirstError)
	}
}
