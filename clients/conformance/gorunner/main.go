// Command gorunner is the Go client's conformance runner: it runs the
// scenarios of clients/conformance/scenarios.json with package client,
// speaking the runner protocol of clients/conformance/README.md on stdin
// and stdout.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fencegw/fencegw/client"
)

// scenario is an entry of scenarios.json, as much as a runner reads.
type scenario struct {
	ID     string         `json:"id"`
	Params map[string]any `json:"params"`
	Cases  []struct {
		Case string `json:"case"`
	} `json:"cases"`
}

// gatewaySpec is the harness's gateway for a scenario.
type gatewaySpec struct {
	URLs       []string `json:"urls"`
	CAFile     string   `json:"ca_file"`
	CertFile   string   `json:"cert_file"`
	KeyFile    string   `json:"key_file"`
	Bearer     string   `json:"bearer"`
	BearerFile string   `json:"bearer_file"`
}

// run is one scenario under way: its parameters, the client of its
// gateway, and the line to the harness.
type run struct {
	sc      scenario
	gw      gatewaySpec
	vars    map[string]any
	c       *client.Client
	ctx     context.Context
	in      *bufio.Scanner
	observe map[string]any
}

// scenarios, by id: each fills r.observe, or returns the error that
// stopped it.
var scenarios = map[string]func(r *run) error{}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gorunner SCENARIOS.json")
		os.Exit(2)
	}
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var file struct {
		Scenarios []scenario `json:"scenarios"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		fmt.Fprintln(os.Stderr, "scenarios:", err)
		os.Exit(1)
	}
	only := strings.Split(os.Getenv("FENCEGW_CONFORMANCE_ONLY"), ",")
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 4<<20)
	for _, sc := range file.Scenarios {
		if only[0] != "" && !slices.Contains(only, sc.ID) {
			continue
		}
		if !runScenario(sc, in) {
			os.Exit(0) // stdin ended: the harness is gone
		}
	}
}

// runScenario runs sc to its result; false if stdin ended.
func runScenario(sc scenario, in *bufio.Scanner) bool {
	emit(map[string]any{"event": "start", "scenario": sc.ID})
	var setup struct {
		Gateway gatewaySpec    `json:"gateway"`
		Vars    map[string]any `json:"vars"`
	}
	if !in.Scan() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := &run{sc: sc, in: in, ctx: ctx, observe: map[string]any{}}
	errText := ""
	if err := json.Unmarshal(in.Bytes(), &setup); err != nil {
		errText = "the start's answer: " + err.Error()
	} else {
		r.gw, r.vars, r.c = setup.Gateway, setup.Vars, newClient(setup.Gateway, "")
		if f, ok := scenarios[sc.ID]; !ok {
			errText = "gorunner does not know scenario " + sc.ID
		} else if err := f(r); err != nil {
			errText = err.Error()
		}
	}
	emit(map[string]any{"event": "result", "scenario": sc.ID, "observed": r.observe, "error": errText})
	return true
}

// newClient is a client of gw; bearerFile, if set, replaces gw's
// credentials but its CA.
func newClient(gw gatewaySpec, bearerFile string) *client.Client {
	var opts []client.Option
	files := client.TLSFiles{CAFile: gw.CAFile, CertFile: gw.CertFile, KeyFile: gw.KeyFile}
	switch {
	case bearerFile != "":
		opts = append(opts, client.WithBearerFile(bearerFile))
		files.CertFile, files.KeyFile = "", ""
	case gw.BearerFile != "":
		opts = append(opts, client.WithBearerFile(gw.BearerFile))
	case gw.Bearer != "":
		opts = append(opts, client.WithBearerToken(gw.Bearer))
	}
	if files != (client.TLSFiles{}) {
		opts = append(opts, client.WithTLSFiles(files))
	}
	return client.NewReplicas(gw.URLs, opts...)
}

// ready prints a ready step and waits for the harness's answer.
func (r *run) ready(step string, data map[string]any) (map[string]any, error) {
	emit(map[string]any{"event": "ready", "scenario": r.sc.ID, "step": step, "data": data})
	if !r.in.Scan() {
		return nil, fmt.Errorf("stdin ended at step %s", step)
	}
	var answer struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(r.in.Bytes(), &answer); err != nil {
		return nil, fmt.Errorf("the answer to %s: %w", step, err)
	}
	return answer.Data, nil
}

// emit prints one line of the protocol.
func emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	os.Stdout.Write(append(b, '\n'))
}

// The scenario's parameters.

func (r *run) str(name string) string { s, _ := r.sc.Params[name].(string); return s }
func (r *run) num(name string) float64 {
	f, _ := r.sc.Params[name].(float64)
	return f
}
func (r *run) seconds(name string) time.Duration {
	return time.Duration(r.num(name) * float64(time.Second))
}
func (r *run) strs(name string) []string {
	var out []string
	list, _ := r.sc.Params[name].([]any)
	for _, v := range list {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// debit is the arguments of a debit or credit of the scenario's account.
func (r *run) debit(cents float64) map[string]any {
	return map[string]any{"account": r.str("account"), "amount_cents": cents}
}

// waitDone waits up to 30 s for the lease's loss signal.
func waitDone(l *client.Lease) bool {
	select {
	case <-l.Done():
		return true
	case <-time.After(30 * time.Second):
		return false
	}
}
