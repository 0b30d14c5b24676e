// Package conformance_test runs every client's conformance runner
// against real gateways: scenarios.json says what each scenario does and
// expects, README.md the protocol, and this package the harness's part
// (the gateways, the faults, the checks from the database and the
// gateway).
package conformance_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/fencegw/fencegw/internal/harness/tsclient"
)

// runnerSpec says how to start one client's runner.
type runnerSpec struct {
	name    string
	runtime string // the program it needs on PATH; "" for none
	dir     string // its working directory, from this folder
	argv    func(t *testing.T, scenarios string) []string
}

var runners = []runnerSpec{
	{name: "go", dir: ".", argv: func(t *testing.T, scenarios string) []string {
		return []string{buildGoRunner(t), scenarios}
	}},
	{name: "python", runtime: "python3", dir: "../python/conformance", argv: func(t *testing.T, scenarios string) []string {
		return []string{"python3", "-u", "runner.py", scenarios}
	}},
	{name: "typescript", runtime: "node", dir: "../typescript", argv: func(t *testing.T, scenarios string) []string {
		tsclient.Build(t)
		return []string{"node", "build/conformance/runner.js", scenarios}
	}},
}

// TestConformance runs every client's runner through every scenario, each
// runner against gateways of its own, at once.
func TestConformance(t *testing.T) {
	file := loadScenarios(t)
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			if r.runtime != "" {
				if _, err := exec.LookPath(r.runtime); err != nil {
					t.Fatalf("%s is not installed, so the %s client's conformance cannot run: install it (.ci/run does)", r.runtime, r.name)
				}
			}
			runAll(t, newEnv(t), r, file)
		})
	}
}

// runAll runs r's runner to its end, each scenario a subtest.
func runAll(t *testing.T, e *env, r runnerSpec, file scenarioFile) {
	argv := r.argv(t, scenariosPath(t))
	p, err := startRunner(r.dir, argv, nil)
	if err != nil {
		t.Fatalf("start %q: %v", argv, err)
	}
	defer func() {
		if err := p.stop(); err != nil {
			t.Errorf("the runner: %v\n%s", err, p.stderr.take())
		}
	}()
	byID := map[string]scenario{}
	for _, sc := range file.Scenarios {
		byID[sc.ID] = sc
	}
	ran := map[string]bool{}
	for {
		m, err := p.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%v\nthe runner's stderr:\n%s", err, p.stderr.take())
		}
		sc, ok := byID[m.Scenario]
		if m.Event != "start" || !ok || ran[m.Scenario] {
			t.Fatalf("line %+v: want the start of a scenario not run yet\nthe runner's stderr:\n%s", m, p.stderr.take())
		}
		ran[sc.ID] = true
		if !t.Run(sc.ID, func(t *testing.T) { runScenario(t, e, p, sc) }) {
			t.Logf("%s: the runner's stderr:\n%s", sc.ID, p.stderr.take())
		}
		p.stderr.take()
	}
	for _, sc := range file.Scenarios {
		if !ran[sc.ID] && os.Getenv("FENCEGW_CONFORMANCE_ONLY") == "" {
			t.Errorf("the runner never ran %s", sc.ID)
		}
	}
}

// gatewaySpec is the gateway a scenario's client is made of.
type gatewaySpec struct {
	URLs       []string `json:"urls"`
	CAFile     string   `json:"ca_file"`
	CertFile   string   `json:"cert_file"`
	KeyFile    string   `json:"key_file"`
	Bearer     string   `json:"bearer"`
	BearerFile string   `json:"bearer_file"`
}

// run is one scenario under way.
type run struct {
	t   *testing.T
	e   *env
	p   *runnerProc
	sc  scenario
	ctx context.Context
	// state carries what a scenario's setup and steps keep for its check.
	state map[string]any
}

// runScenario answers the runner's start, serves its ready steps, and
// judges its result.
func runScenario(t *testing.T, e *env, p *runnerProc, sc scenario) {
	h, ok := harnesses[sc.ID]
	if !ok {
		t.Errorf("the harness has no part for %s", sc.ID)
	}
	e.proxy.reset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &run{t: t, e: e, p: p, sc: sc, ctx: ctx, state: map[string]any{}}
	gw := gatewaySpec{URLs: []string{e.proxy.URL}}
	vars := map[string]any{}
	if h.setup != nil {
		h.setup(s, &gw, vars)
	}
	if err := p.send(map[string]any{"scenario": sc.ID, "gateway": gw, "vars": vars}); err != nil {
		t.Fatal(err)
	}
	steps := 0
	for {
		m, err := p.next()
		if err != nil {
			t.Fatalf("%v, want the scenario's next line", err)
		}
		switch m.Event {
		case "ready":
			// A repeating step stays the expected one while it repeats.
			if steps > 0 && sc.Steps[steps-1].Repeat && m.Step == sc.Steps[steps-1].Step {
				steps--
			}
			if steps >= len(sc.Steps) || m.Step != sc.Steps[steps].Step {
				t.Errorf("ready step %q, want the scenario's next step of %v", m.Step, sc.Steps)
			}
			steps++
			data := map[string]any{}
			if f := h.steps[m.Step]; f != nil {
				data = f(s, m.Data)
			}
			if err := p.send(map[string]any{"step": m.Step, "data": data}); err != nil {
				t.Fatal(err)
			}
		case "result":
			if m.Scenario != sc.ID {
				t.Fatalf("the result of %q, want %q's", m.Scenario, sc.ID)
			}
			if m.Error != "" {
				t.Errorf("the runner failed: %s", m.Error)
			}
			if steps != len(sc.Steps) {
				t.Errorf("%d ready steps, want %d", steps, len(sc.Steps))
			}
			judge(t, sc.Expect, m.Observed)
			if h.check != nil {
				h.check(s, m.Observed)
			}
			return
		default:
			t.Fatalf("line %+v, want a ready step or the result", m)
		}
	}
}

// judge holds observed to expect: each key's value equal, as JSON.
func judge(t *testing.T, expect, observed map[string]any) {
	t.Helper()
	for k, want := range expect {
		got, ok := observed[k]
		if !ok {
			t.Errorf("observed has no %s (want %v): %v", k, want, observed)
			continue
		}
		if !sameJSON(got, want) {
			t.Errorf("%s: observed %v, want %v", k, asJSON(got), asJSON(want))
		}
	}
}

func sameJSON(a, b any) bool {
	var x, y any
	_ = json.Unmarshal([]byte(asJSON(a)), &x)
	_ = json.Unmarshal([]byte(asJSON(b)), &y)
	return reflect.DeepEqual(x, y)
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// buildGoRunner builds gorunner, the Go client's runner, into the test's
// temporary folder.
func buildGoRunner(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "gorunner")
	// go test puts its own Go first on the PATH of what it runs.
	cmd := exec.Command("go", "build", "-o", out, "./gorunner")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./gorunner: %v\n%s", err, b)
	}
	return out
}
