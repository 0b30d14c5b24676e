package bench

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const wrkLine = "fencegw-wrk duration_us=2000000 requests=1000 status_errors=0 connect_errors=0 read_errors=0 write_errors=0 timeouts=0 p50_us=1500 p99_us=9000 p999_us=12000 max_us=15000"

// TestParseWrk reads the line the script's done() prints among wrk's own
// text, and refuses anything else with ErrWrkOutput.
func TestParseWrk(t *testing.T) {
	w, err := parseWrk("Running 2s test @ http://127.0.0.1:1/\n  Requests/sec: 500.00\n" + wrkLine + "\n")
	if err != nil {
		t.Fatal(err)
	}
	want := WrkPath{DurationSeconds: 2, Requests: 1000, Writes: 1000, WritesPerSec: 500,
		Latency: Percentiles{P50: 1500 * time.Microsecond, P99: 9 * time.Millisecond, P999: 12 * time.Millisecond, Max: 15 * time.Millisecond}}
	if w != want {
		t.Errorf("parseWrk = %+v, want %+v", w, want)
	}
	refused, err := parseWrk(strings.Replace(strings.Replace(wrkLine, "status_errors=0", "status_errors=10", 1), "timeouts=0", "timeouts=2", 1))
	if err != nil {
		t.Fatal(err)
	}
	if refused.Writes != 990 || refused.StatusErrors != 10 || refused.SocketErrors != 2 || refused.valid() {
		t.Errorf("with refusals: %+v, valid %v; want 990 writes, 10 refused, 2 socket errors, not valid", refused, refused.valid())
	}
	for name, out := range map[string]string{
		"no line":           "Running 2s test\nRequests/sec: 500\n",
		"a field missing":   strings.Replace(wrkLine, " timeouts=0", "", 1),
		"a field twice":     wrkLine + " requests=5",
		"not a number":      strings.Replace(wrkLine, "requests=1000", "requests=many", 1),
		"negative":          strings.Replace(wrkLine, "requests=1000", "requests=-1", 1),
		"huge":              strings.Replace(wrkLine, "requests=1000", "requests=99999999999999", 1),
		"no duration":       strings.Replace(wrkLine, "duration_us=2000000", "duration_us=0", 1),
		"more refused":      strings.Replace(wrkLine, "status_errors=0", "status_errors=1001", 1),
		"a word, no equals": wrkLine + " extra",
	} {
		if _, err := parseWrk(out); !errors.Is(err, ErrWrkOutput) {
			t.Errorf("%s: parseWrk = %v, want ErrWrkOutput", name, err)
		}
	}
}

// FuzzParseWrk: whatever wrk prints, parseWrk returns figures that make
// sense or ErrWrkOutput, and never panics.
func FuzzParseWrk(f *testing.F) {
	f.Add(wrkLine)
	f.Add("Running 1s test\n" + wrkLine + "\nfencegw-wrk requests=1")
	f.Add("fencegw-wrk duration_us=1 requests=0 status_errors=0 connect_errors=0 read_errors=0 write_errors=0 timeouts=0 p50_us=0 p99_us=0 p999_us=0 max_us=0")
	f.Add("fencegw-wrk ==")
	f.Fuzz(func(t *testing.T, out string) {
		w, err := parseWrk(out)
		if err != nil {
			if !errors.Is(err, ErrWrkOutput) {
				t.Fatalf("parseWrk error %v does not wrap ErrWrkOutput", err)
			}
			return
		}
		if w.DurationSeconds <= 0 || w.Writes < 0 || w.Writes > w.Requests || w.WritesPerSec < 0 || w.SocketErrors < 0 {
			t.Fatalf("parseWrk(%q) = %+v: not a run", out, w)
		}
	})
}
