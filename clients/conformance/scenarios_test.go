package conformance_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// scenarioFile is scenarios.json, the list every runner runs.
type scenarioFile struct {
	Version   int        `json:"version"`
	Scenarios []scenario `json:"scenarios"`
}

// scenario is one entry of scenarios.json, as much of it as the harness
// reads; the rest is for the runners' authors.
type scenario struct {
	ID     string `json:"id"`
	Params params `json:"params"`
	Steps  []struct {
		Step   string `json:"step"`
		Repeat bool   `json:"repeat"`
	} `json:"steps"`
	Expect map[string]any `json:"expect"`
	Cases  []injectedCase `json:"cases"`
}

// params are a scenario's values, as JSON gives them.
type params map[string]any

func (p params) str(name string) string  { s, _ := p[name].(string); return s }
func (p params) num(name string) float64 { f, _ := p[name].(float64); return f }
func (p params) strs(name string) []string {
	var out []string
	list, _ := p[name].([]any)
	for _, v := range list {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// injectedCase is an answer the proxy serves in problem-types-injected:
// a problem document of the case's type unless Body says otherwise.
type injectedCase struct {
	Case        string         `json:"case"`
	Status      int            `json:"status"`
	ContentType string         `json:"content_type"`
	Body        string         `json:"body"`
	Extra       map[string]any `json:"extra"`
	Expect      string         `json:"expect"`
}

// want is the outcome's name the runner must report for the case.
func (c injectedCase) want() string {
	if c.Expect != "" {
		return c.Expect
	}
	return c.Case
}

// answer is what the proxy serves for the case.
func (c injectedCase) answer() action {
	if c.Body != "" {
		ct := c.ContentType
		if ct == "" {
			ct = "application/problem+json"
		}
		return serve(c.Status, ct, c.Body)
	}
	doc := map[string]any{"type": "urn:fencegw:problem:" + c.Case, "title": c.Case, "status": c.Status,
		"detail": "served by the conformance proxy", "instance": "urn:fencegw:request:conformance"}
	for k, v := range c.Extra {
		doc[k] = v
	}
	b, _ := json.Marshal(doc)
	return serve(c.Status, "application/problem+json", string(b))
}

// scenariosPath is the absolute path of scenarios.json, given to runners.
func scenariosPath(t testing.TB) string {
	t.Helper()
	p, err := filepath.Abs("scenarios.json")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func loadScenarios(t testing.TB) scenarioFile {
	t.Helper()
	b, err := os.ReadFile(scenariosPath(t))
	if err != nil {
		t.Fatal(err)
	}
	var f scenarioFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("scenarios.json: %v", err)
	}
	if f.Version != 1 || len(f.Scenarios) == 0 {
		t.Fatalf("scenarios.json: version %d, %d scenarios", f.Version, len(f.Scenarios))
	}
	return f
}
