package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/policy"
)

// needWrk returns wrk's path, or skips: wrk is optional, and the script
// and the parser are tested without it (wrkscript_test.go,
// wrkparse_test.go).
func needWrk(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("wrk")
	if err != nil {
		t.Skip("wrk is not installed (apt-get install wrk): skipping the run of the generated script under wrk")
	}
	return bin
}

// wrkRecorder is a gateway stand-in that records the writes wrk sends.
type wrkRecorder struct {
	mu     sync.Mutex
	ids    map[int64]int
	bad    []string
	status int
}

func (rec *wrkRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body struct{ ID, Amount int64 }
	err := json.Unmarshal(b, &body)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	switch want := wrkTestToken(body.ID); {
	case err != nil || r.Method != http.MethodPost || r.URL.Path != "/v1/ops/add" || r.Header.Get("Content-Type") != "application/json":
		rec.bad = append(rec.bad, fmt.Sprintf("%s %s %q %s", r.Method, r.URL.Path, r.Header.Get("Content-Type"), b))
	case body.ID < 1 || body.ID > Accounts || body.Amount != Amount || r.Header.Get(gateway.TokenHeader) != want:
		rec.bad = append(rec.bad, fmt.Sprintf("id %d amount %d token %q", body.ID, body.Amount, r.Header.Get(gateway.TokenHeader)))
	default:
		rec.ids[body.ID]++
	}
	w.WriteHeader(rec.status)
}

func wrkTestToken(id int64) string { return fmt.Sprintf("1:9:sig-of-%d", id) }

// TestWrkSendsTheCellsWrites runs the generated script under wrk against
// a stand-in that checks every request: the operation's path, account
// id's own token and body, accounts spread as the distribution says; and
// a stand-in that refuses every write makes the run invalid.
func TestWrkSendsTheCellsWrites(t *testing.T) {
	bin := needWrk(t)
	signed := make([]string, Accounts)
	for i := range signed {
		signed[i] = wrkTestToken(int64(i + 1))
	}
	e := &env{cfg: Config{Duration: time.Second}, wrk: bin, work: workload{op: &policy.Operation{Name: "add"}}}
	run := func(d Dist, status int) (*WrkPath, *wrkRecorder) {
		rec := &wrkRecorder{ids: map[int64]int{}, status: status}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		w, err := e.runWrk(ctx, srv.URL, 2, d, signed)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if len(rec.bad) > 0 {
			t.Fatalf("%s: %d requests not the cell's writes, the first: %s", d, len(rec.bad), rec.bad[0])
		}
		return w, rec
	}
	uniform, rec := run(Uniform, http.StatusOK)
	if !uniform.valid() || uniform.Connections != 2 || len(rec.ids) < 2 {
		t.Errorf("uniform: %+v over %d accounts; want valid writes over many accounts", uniform, len(rec.ids))
	}
	hot, rec := run(Hot, http.StatusOK)
	if !hot.valid() || len(rec.ids) != 1 || rec.ids[1] == 0 {
		t.Errorf("hot: %+v over accounts %v; want account 1 alone", hot, rec.ids)
	}
	zipf, rec := run(Zipf, http.StatusOK)
	for id, n := range rec.ids {
		if n > rec.ids[1] {
			t.Errorf("zipf: account %d written %d times, more than account 1's %d", id, n, rec.ids[1])
		}
	}
	if !zipf.valid() {
		t.Errorf("zipf: %+v, want valid", zipf)
	}
	refused, _ := run(Hot, http.StatusConflict)
	if refused.valid() || refused.StatusErrors == 0 || refused.Writes != 0 {
		t.Errorf("every write refused: %+v, valid %v; want status errors and no writes, not valid", refused, refused.valid())
	}
}

// TestRunWithWrk runs tiny cells with wrk beside the bench's client on
// the in-process gateway: wrk's writes are acknowledged, refused none,
// land in the database, and the report sets them beside the client's.
func TestRunWithWrk(t *testing.T) {
	needWrk(t)
	dbURL := testenv.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{
		DatabaseURL: dbURL, EtcdEndpoints: testenv.EtcdEndpoints(), KEKFile: testenv.KEKFile(t), Dir: "../../../testdata/bench",
		Clients: []int{2}, Dists: []Dist{Uniform, Hot}, Duration: 100 * time.Millisecond, MinWrites: 10, NoPgbench: true, Wrk: true,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := rep.Err(); err != nil {
		t.Errorf("Report.Err = %v, want nil", err)
	}
	var acknowledged int64
	for _, c := range rep.Cells {
		if w := c.Wrk; w == nil || !w.valid() || w.Connections != 2 || c.WrkRatio <= 0 {
			t.Errorf("%d×%s: wrk %+v (ratio %v), want valid writes on 2 connections", c.Clients, c.Dist, w, c.WrkRatio)
			continue
		}
		acknowledged += c.Direct.Writes + c.Gateway.Writes + c.Wrk.Writes
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var sum int64
	if err := conn.QueryRow(ctx, "SELECT sum(balance) FROM bench.accounts").Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if sum < acknowledged*Amount {
		t.Errorf("sum of balances %d, less than the %d writes acknowledged to the bench and wrk", sum, acknowledged)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "wrk, an outside load generator") {
		t.Errorf("text report has no wrk table:\n%s", text.String())
	}
}
