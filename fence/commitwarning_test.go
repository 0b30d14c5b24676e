package fence_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/outcome"
)

// warnAtCommit makes PostgreSQL answer every COMMIT of a transaction that
// wrote table with a WARNING, as it answers one whose wait for synchronous
// replication was cancelled: a deferred trigger that warns. (The real
// thing, with a standby, is gateway's TestACancelledSyncRepWaitIsNotAcknowledged.)
func warnAtCommit(t *testing.T, d *db, table string) {
	t.Helper()
	d.exec(`CREATE OR REPLACE FUNCTION public.warn_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE WARNING 'test: warned at commit'; RETURN NULL; END $$`)
	d.exec(fmt.Sprintf(`CREATE CONSTRAINT TRIGGER warn_at_commit AFTER INSERT OR UPDATE ON %s
		DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.warn_at_commit()`, table))
}

func (d *db) exec(sql string) {
	d.t.Helper()
	if _, err := d.pool.Exec(context.Background(), sql); err != nil {
		d.t.Fatalf("%s: %v", sql, err)
	}
}

// wantWarned checks err is a commit PostgreSQL warned about: unknown,
// naming the warning.
func wantWarned(t *testing.T, what string, err error) {
	t.Helper()
	var warned *fence.CommitWarningError
	if !errors.As(err, &warned) {
		t.Fatalf("%s: %v, want the COMMIT's warning (outcome unknown)", what, err)
	}
	if outcome.Of(err) != outcome.Unknown || !errors.Is(err, fence.ErrOutcomeUnknown) || !errors.Is(err, fence.ErrUnavailable) {
		t.Fatalf("%s: outcome %v, want unknown", what, outcome.Of(err))
	}
	if warned.Message != "test: warned at commit" || warned.Code != "01000" {
		t.Fatalf("%s: warning %q (SQLSTATE %s), want the trigger's", what, warned.Message, warned.Code)
	}
}

func key(v string) *fence.IdempotencyKey {
	return &fence.IdempotencyKey{Client: "t", Scope: "credit", Value: v, Retention: time.Hour}
}

// TestACommitWarnedAboutIsNotAcknowledged: a COMMIT answered with a
// warning is never a success, on every path a write commits by: alone
// (each of pgx's query modes), keyed, a batch, and a keyed retry finds out
// what the server kept.
func TestACommitWarnedAboutIsNotAcknowledged(t *testing.T) {
	for _, mode := range []string{"", "exec", "simple_protocol"} {
		t.Run("lone "+mode, func(t *testing.T) {
			d := newDB(t)
			warnAtCommit(t, d, "demo.write_log")
			st := d.store
			if mode != "" {
				st = storeInMode(t, d, mode)
			}
			req := mustRequest(t, credit(d, "acct-1", 7))
			_, err := st.Apply(context.Background(), req)
			wantWarned(t, "a lone write", err)
			if got := d.balance("acct-1"); got != 1001 {
				t.Fatalf("balance %d, want 1001: the commit happened here, only whether it lasts is unknown", got)
			}
		})
	}
	t.Run("keyed, then retried", func(t *testing.T) {
		d := newDB(t)
		warnAtCommit(t, d, "demo.write_log")
		_, err := d.apply(key("k1"), credit(d, "acct-2", 7))
		wantWarned(t, "a keyed write", err)
		// Where the commit lasted, the key's retry replays its answer.
		resp, err := d.apply(key("k1"), credit(d, "acct-2", 7))
		if err != nil || !resp.Replayed || resp.Status != 200 {
			t.Fatalf("the retry: %+v, %v; want the stored 200 replayed", resp, err)
		}
		if got := d.balance("acct-2"); got != 1001 {
			t.Fatalf("balance %d, want 1001: credited once", got)
		}
	})
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch keyed=%v", keyed), func(t *testing.T) {
			d := newDB(t)
			warnAtCommit(t, d, "demo.write_log")
			var k *fence.IdempotencyKey
			if keyed {
				k = key("kb")
			}
			_, err := d.apply(k, credit(d, "acct-3", 7), credit(d, "acct-4", 7))
			wantWarned(t, "a batch", err)
		})
	}
	t.Run("a warning before the commit", func(t *testing.T) {
		// A statement's own warning is not the commit's: the write is
		// applied and acknowledged.
		d := newDB(t)
		d.exec(`CREATE FUNCTION public.warn_now() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE WARNING 'test: warned by a statement'; RETURN NEW; END $$`)
		d.exec(`CREATE TRIGGER warn_now BEFORE INSERT ON demo.write_log FOR EACH ROW EXECUTE FUNCTION public.warn_now()`)
		if _, err := d.apply(nil, credit(d, "acct-5", 7)); err != nil {
			t.Fatalf("unkeyed: %v", err)
		}
		if _, err := d.apply(key("kw"), credit(d, "acct-5", 8)); err != nil {
			t.Fatalf("keyed: %v", err)
		}
	})
}

// TestACommitWarnedAboutInAGroup: writes that share a transaction, unkeyed
// (one implicit transaction) and keyed (stored with one COMMIT), are all
// answered unknown when that COMMIT was warned about.
func TestACommitWarnedAboutInAGroup(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			d := newDB(t)
			gs := newGroupStore(t, d, 1, newCommitGate())
			release, first := occupy(t, d, gs, "acct-60") // before the trigger: its answer is not under test
			warnAtCommit(t, d, "demo.write_log")
			accounts := []string{"acct-61", "acct-62", "acct-63"}
			var starts []func() <-chan reply
			for _, a := range accounts {
				starts = append(starts, func() <-chan reply {
					if keyed {
						return gs.applyKeyedAsync(t, "k-"+a, credit(d, a, 7))
					}
					return gs.applyAsync(t, credit(d, a, 7))
				})
			}
			waiting := inLine(t, gs, starts...)
			release()
			<-first // committed before the trigger was made, or warned about: either way not under test
			for i, ch := range waiting {
				wantWarned(t, accounts[i], (<-ch).err)
			}
			groupedIn(t, gs, len(accounts))
		})
	}
}

// TestASettlementWarnedAboutIsUnknown: a refusal stored as its key's
// outcome by a commit PostgreSQL warned about may not last, and a retry
// with the key could then run afresh: the settlement is unknown.
func TestASettlementWarnedAboutIsUnknown(t *testing.T) {
	d := newDB(t)
	warnAtCommit(t, d, "fencegw.idempotency_keys")
	refusal := fence.Response{Status: 409, Body: []byte(`{"type":"stale-token"}`)}
	_, _, err := d.store.Settle(context.Background(), key("ks"), &refusal)
	wantWarned(t, "settling a refusal", err)
}

// TestAnAdvanceWarnedAboutIsUnknown: an operator's fence advance cuts a
// holder off only if it lasts.
func TestAnAdvanceWarnedAboutIsUnknown(t *testing.T) {
	d := newDB(t)
	if _, err := d.apply(nil, credit(d, "acct-7", 7)); err != nil {
		t.Fatal(err)
	}
	warnAtCommit(t, d, "fencegw.fences")
	_, _, err := d.store.AdvanceFence(context.Background(), "account/acct-7", tok(9), false)
	wantWarned(t, "an advance", err)
}

// TestWarningsHeardWhateverTheRoleAsks: a role or database that asks
// PostgreSQL not to send warnings (client_min_messages = error) does not
// hide a commit's warning from the Store: ConfigurePool asks for them in
// the startup packet, which wins.
func TestWarningsHeardWhateverTheRoleAsks(t *testing.T) {
	d := newDB(t)
	warnAtCommit(t, d, "demo.write_log")
	d.exec(`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET client_min_messages = error', current_database()); END $$`)
	st := storeInMode(t, d, "")
	_, err := st.Apply(context.Background(), mustRequest(t, credit(d, "acct-8", 7)))
	wantWarned(t, "a write on a database that asks for errors only", err)

	// And the URL's own client_min_messages = error is replaced likewise.
	pc, err := pgxpool.ParseConfig(d.pool.Config().ConnString() + "&client_min_messages=error")
	if err != nil {
		t.Fatal(err)
	}
	fence.ConfigurePool(pc)
	if got := pc.ConnConfig.RuntimeParams["client_min_messages"]; got != "warning" {
		t.Fatalf("client_min_messages %q after ConfigurePool, want warning", got)
	}
}

// TestNewRefusesAPoolDeafToWarnings: a Store on a pool that does not hear
// warnings could acknowledge a commit PostgreSQL warned about.
func TestNewRefusesAPoolDeafToWarnings(t *testing.T) {
	d := newDB(t)
	pool, err := pgxpool.New(context.Background(), d.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := fence.New(fence.Config{Pool: pool}); err == nil {
		t.Fatal("New accepted a pool without ConfigurePool")
	}
}

// storeInMode is a Store on a new pool of d's database in pgx's query
// mode ("" for its default).
func storeInMode(t *testing.T, d *db, mode string) *fence.Store {
	t.Helper()
	url := d.pool.Config().ConnString()
	if mode != "" {
		url += "&default_query_exec_mode=" + mode
	}
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	fence.ConfigurePool(pc)
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st, err := fence.New(fence.Config{Pool: pool, NoCoalescing: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}
