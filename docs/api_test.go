package docs

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/markdown"
	"github.com/fencegw/fencegw/policy"
)

// openAPI is the gateway's own description of the demo policy's API: the
// paths it serves and every problem type it can answer.
type openAPI struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas struct {
			Problem struct {
				Properties struct {
					Type struct {
						Enum []string `json:"enum"`
					} `json:"type"`
				} `json:"properties"`
			} `json:"Problem"`
		} `json:"schemas"`
	} `json:"components"`
}

func demoAPI(t *testing.T) (openAPI, *policy.Policy) {
	t.Helper()
	pol, err := policy.Load("../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := gateway.OpenAPI(pol, "docs")
	if err != nil {
		t.Fatal(err)
	}
	var doc openAPI
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc, pol
}

// apiSection is the text of one section of docs/api.md.
func apiSection(t *testing.T, title string) string {
	t.Helper()
	b, err := os.ReadFile("api.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	h, end, ok := markdown.Parse(string(b)).Section(title)
	if !ok {
		t.Fatalf("api.md has no section %q", title)
	}
	if end < 0 {
		end = len(lines) + 1
	}
	return strings.Join(lines[h.Line:end-1], "\n")
}

var problemRow = regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\|")

// TestAPIDocumentsEveryProblemType: every problem type the gateway can
// answer (its OpenAPI document lists them; a policy's own sql_errors
// aside) has its row in api.md's troubleshooting table, and every row
// names a type the gateway has.
func TestAPIDocumentsEveryProblemType(t *testing.T) {
	doc, pol := demoAPI(t)
	policyOwn := map[string]bool{}
	for _, m := range pol.SQLErrorMappings() {
		policyOwn[m.Kind] = true
	}
	var kinds []string
	for _, typ := range doc.Components.Schemas.Problem.Properties.Type.Enum {
		if kind := strings.TrimPrefix(typ, "urn:fencegw:problem:"); !policyOwn[kind] {
			kinds = append(kinds, kind)
		}
	}
	if len(kinds) < 20 {
		t.Fatalf("the OpenAPI document lists %d problem types: %q", len(kinds), kinds)
	}
	var rows []string
	for _, m := range problemRow.FindAllStringSubmatch(apiSection(t, "Problems: what each means and what to do"), -1) {
		rows = append(rows, m[1])
	}
	for _, k := range kinds {
		if !slices.Contains(rows, k) {
			t.Errorf("api.md's troubleshooting table has no row for the problem type %s", k)
		}
	}
	for _, r := range rows {
		if !slices.Contains(kinds, r) {
			t.Errorf("api.md's troubleshooting table has a row for %s, which the gateway never answers", r)
		}
	}
}

// TestAPIDocumentsEveryEndpoint: every method and path of the gateway's
// OpenAPI document (an operation's path as /v1/ops/{operation}) is in
// api.md's endpoint table.
func TestAPIDocumentsEveryEndpoint(t *testing.T) {
	doc, _ := demoAPI(t)
	section := apiSection(t, "Endpoints")
	generic := regexp.MustCompile(`^/v1/(ops|reads)/[^/]+$`)
	for path, methods := range doc.Paths {
		path = generic.ReplaceAllString(path, "/v1/$1/{operation}")
		for method := range methods {
			want := regexp.MustCompile("`" + strings.ToUpper(method) + " " + regexp.QuoteMeta(path) + "[`?]")
			if !want.MatchString(section) {
				t.Errorf("api.md's endpoints do not list %s %s", strings.ToUpper(method), path)
			}
		}
	}
}
