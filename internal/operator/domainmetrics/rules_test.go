package domainmetrics

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// ruleFile is deploy/'s PrometheusRule, relative to this package.
const ruleFile = "../../../deploy/components/monitoring/prometheus_rule.yaml"

// prometheusRule is the part of a PrometheusRule that Prometheus reads.
type prometheusRule struct {
	Spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

func readRule(t *testing.T) (prometheusRule, []byte) {
	t.Helper()
	data, err := os.ReadFile(ruleFile)
	if err != nil {
		t.Fatal(err)
	}
	var rule prometheusRule
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatalf("read %s: %v", ruleFile, err)
	}
	return rule, data
}

// writeRulesFile writes the PrometheusRule's groups as a Prometheus rules
// file, which is what the Prometheus Operator hands Prometheus.
func writeRulesFile(t *testing.T, dir string, data []byte) string {
	t.Helper()
	var obj struct {
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatalf("read %s: %v", ruleFile, err)
	}
	out, err := yaml.Marshal(map[string]any{"groups": obj.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// promtool returns the promtool hack/prometheus.sh built, from
// PROMETHEUS_BIN_DIR (make test sets it); the test is skipped without it.
func promtool(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("PROMETHEUS_BIN_DIR")
	if dir == "" {
		t.Skip("PROMETHEUS_BIN_DIR is not set: run make test, or set it to the folder hack/prometheus.sh prints")
	}
	bin := filepath.Join(dir, "promtool")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("PROMETHEUS_BIN_DIR is set but holds no promtool (run hack/prometheus.sh): %v", err)
	}
	return bin
}

// The alerts are valid rules as Prometheus itself reads them, and each
// fires on the series of testdata/rules_test.yaml that should make it
// fire, and on no others: promtool test rules compares the alerts at each
// evaluation time, labels and rendered annotations, with those expected.
func TestAlertRulesWithPromtool(t *testing.T) {
	bin := promtool(t)
	_, data := readRule(t)
	dir := t.TempDir()
	rules := writeRulesFile(t, dir, data)
	if out, err := exec.Command(bin, "check", "rules", "--lint=all", "--lint-fatal", rules).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	tests, err := os.ReadFile("testdata/rules_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	testsFile := filepath.Join(dir, "rules_test.yaml")
	if err := os.WriteFile(testsFile, tests, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "test", "rules", testsFile)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	t.Logf("promtool test rules:\n%s", out)
}

// Each alert is tested both ways: some evaluation of testdata/rules_test.yaml
// expects it to fire, and some expects it not to (an empty exp_alerts).
func TestEveryAlertIsTestedFiringAndNot(t *testing.T) {
	rule, _ := readRule(t)
	data, err := os.ReadFile("testdata/rules_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTests []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(data, &tests); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTests {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if !fires[r.Alert] || !quiet[r.Alert] {
				t.Errorf("alert %s: tested firing %v, tested not firing %v; test it both ways", r.Alert, fires[r.Alert], quiet[r.Alert])
			}
		}
	}
}

// Each alert's runbook_url names a section of docs/runbooks.md.
func TestEveryAlertHasARunbook(t *testing.T) {
	rule, _ := readRule(t)
	doc, err := os.ReadFile("../../../docs/runbooks.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if title, ok := strings.CutPrefix(line, "## "); ok {
			anchors[githubAnchor(title)] = true
		}
	}
	const base = "https://example.com/platform-operator/docs/runbooks.md#"
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], base)
			if !ok || !anchors[anchor] {
				t.Errorf("alert %s: runbook_url %q is not %s<a section of docs/runbooks.md>", r.Alert, r.Annotations["runbook_url"], base)
			}
		}
	}
}

// githubAnchor is the anchor GitHub gives a heading: lower case, spaces to
// dashes, punctuation dropped.
func githubAnchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(title)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// promqlWords are the words of PromQL that are not metric names: the
// functions, aggregations and keywords the rules use.
var promqlWords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
	"max", "min", "sum", "count", "avg", "time", "absent", "rate", "increase", "changes", "offset"}

// metricNames returns the metric names an expression reads: its words
// once label matchers, strings and grouping label lists are taken out.
func metricNames(expr string) []string {
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`\{[^}]*\}`),
		regexp.MustCompile(`\[[^\]]*\]`),
		regexp.MustCompile(`"[^"]*"`),
		regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`),
	} {
		expr = re.ReplaceAllString(expr, " ")
	}
	var names []string
	for _, word := range regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`).FindAllString(expr, -1) {
		if !slices.Contains(promqlWords, word) && !slices.Contains(names, word) {
			names = append(names, word)
		}
	}
	return names
}
