package deploy

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// ruleFile is Prometheus' rule file format, strictly: an unknown key is
// a mistake Prometheus would refuse too.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// templatePrefix is what Prometheus puts before an annotation's text
// when it expands it, so a template that names $labels parses here too.
const templatePrefix = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"

// TestAlertRulesNameExportedMetrics: the shipped alert rules parse as
// Prometheus parses them (the file, each PromQL expression, each duration
// and annotation template), and each rule names only metrics the gateway
// registers, with label names those metrics have and label values the
// code spells: a metric renamed in the code fails here, not in silence.
func TestAlertRulesNameExportedMetrics(t *testing.T) {
	b, err := os.ReadFile("prometheus-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var rf ruleFile
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("prometheus-alerts.yml: %v", err)
	}
	exported := exportedMetrics(t, "..")
	literals := stringLiterals(t, "..")
	jobs := scrapeJobs(t)
	names := map[string]bool{}
	checked := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			where := g.Name + "/" + r.Alert
			switch {
			case r.Alert == "":
				t.Errorf("%s: a rule without a name", where)
			case names[r.Alert]:
				t.Errorf("%s: two rules of that name", where)
			}
			names[r.Alert] = true
			if r.For != "" {
				if _, err := model.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", where, r.For, err)
				}
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", where, s)
			}
			for _, k := range []string{"summary", "description"} {
				text := r.Annotations[k]
				if text == "" {
					t.Errorf("%s: no %s", where, k)
				}
				if _, err := template.New(k).Parse(templatePrefix + text); err != nil {
					t.Errorf("%s: %s: %v", where, k, err)
				}
			}
			expr, err := parser.ParseExpr(r.Expr)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
				if vs, ok := node.(*parser.VectorSelector); ok {
					checkSelector(t, where, vs, exported, literals, jobs)
					checked++
				}
				return nil
			})
		}
	}
	if len(names) < 5 || checked < len(names) {
		t.Fatalf("read %d rules and %d selectors: the file or the parse lost them", len(names), checked)
	}
	checkRulesLoaded(t)
}

// checkSelector holds one selector of a rule to what the gateway exports:
// Prometheus' own up, of a job the scrape configuration names, or one of
// the gateway's metrics with its labels and values the code spells.
func checkSelector(t *testing.T, where string, vs *parser.VectorSelector, exported map[string][]string, literals map[string]bool, jobs []string) {
	t.Helper()
	labels, ok := exported[vs.Name]
	if vs.Name == "up" {
		labels, ok = []string{}, true
	}
	if !ok {
		t.Errorf("%s: %s is no metric the gateway registers", where, vs.Name)
		return
	}
	for _, m := range vs.LabelMatchers {
		switch {
		case m.Name == model.MetricNameLabel, m.Name == "instance":
		case m.Name == "job":
			if !slices.Contains(jobs, m.Value) {
				t.Errorf("%s: job %q, but Prometheus scrapes the gateways as %q", where, m.Value, jobs)
			}
		case !slices.Contains(labels, m.Name):
			t.Errorf("%s: %s has no label %s (it has %q)", where, vs.Name, m.Name, labels)
		default:
			for _, v := range strings.Split(m.Value, "|") {
				if !literals[v] {
					t.Errorf("%s: %s{%s=%q}: the code never spells %q", where, vs.Name, m.Name, m.Value, v)
				}
			}
		}
	}
}

// scrapeJobs are the job names the compose stack's Prometheus gives what
// it scrapes, in both its configurations.
func scrapeJobs(t *testing.T) []string {
	t.Helper()
	var jobs []string
	for _, file := range []string{"prometheus.yml", "prometheus-tls.yml"} {
		var prom struct {
			ScrapeConfigs []struct {
				JobName string `yaml:"job_name"`
			} `yaml:"scrape_configs"`
		}
		readYAML(t, file, &prom)
		for _, sc := range prom.ScrapeConfigs {
			jobs = append(jobs, sc.JobName)
		}
	}
	return jobs
}

// checkRulesLoaded: both Prometheus configurations load the rules from
// where the compose file mounts them.
func checkRulesLoaded(t *testing.T) {
	t.Helper()
	const target = "/etc/prometheus/alerts.yml"
	for _, file := range []string{"prometheus.yml", "prometheus-tls.yml"} {
		var prom struct {
			RuleFiles []string `yaml:"rule_files"`
		}
		readYAML(t, file, &prom)
		if !slices.Equal(prom.RuleFiles, []string{target}) {
			t.Errorf("%s loads rules from %q, want %s", file, prom.RuleFiles, target)
		}
	}
	var compose struct {
		Services map[string]struct {
			Volumes []string `yaml:"volumes"`
		} `yaml:"services"`
	}
	readYAML(t, "../docker-compose.yml", &compose)
	mount := regexp.MustCompile(`^\./deploy/prometheus-alerts\.yml:` + regexp.QuoteMeta(target) + `(:ro)?$`)
	if !slices.ContainsFunc(compose.Services["prometheus"].Volumes, mount.MatchString) {
		t.Errorf("docker-compose.yml's prometheus mounts %q, not deploy/prometheus-alerts.yml at %s", compose.Services["prometheus"].Volumes, target)
	}
}

func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}
