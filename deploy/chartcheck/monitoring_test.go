package chartcheck

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// The alerting rules and the dashboard: one copy each, in the chart (Helm's
// .Files reads only inside it); deploy/prometheus and deploy/grafana link
// to them for a Prometheus or a Grafana outside Kubernetes.
const (
	rulesFile     = chartDir + "/files/joinery-rules.yaml"
	dashboardFile = chartDir + "/files/joinery-dashboard.json"
	rulesTests    = "../prometheus/joinery-rules_test.yaml"
)

func readRules(t *testing.T) RulesFile {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f RulesFile
	if err := UnmarshalStrict(b, &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	if len(f.Groups) == 0 {
		t.Fatalf("%s: no groups", rulesFile)
	}
	return f
}

func alertNames(f RulesFile) []string {
	var names []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				names = append(names, r.Alert)
			}
		}
	}
	return names
}

// checkMonitoring checks the PrometheusRule and the dashboard ConfigMap of
// a render: there exactly when enabled, holding the chart's files.
func checkMonitoring(t *testing.T, f fleet, v chartutil.Values) {
	t.Helper()
	ruleOn, _ := v.PathValue("metrics.prometheusRule.enabled")
	if ruleOn != true {
		if f.rule != nil {
			t.Error("PrometheusRule rendered while metrics.prometheusRule.enabled is off")
		}
	} else if f.rule == nil {
		t.Error("metrics.prometheusRule.enabled but no PrometheusRule")
	} else {
		file := readRules(t)
		disabled, _ := v.PathValue("metrics.prometheusRule.disabled")
		extra, _ := v.PathValue("metrics.prometheusRule.ruleLabels")
		var want []string
		for _, a := range alertNames(file) {
			if !slices.Contains(toStrings(disabled), a) {
				want = append(want, a)
			}
		}
		if got := alertNames(f.rule.Spec); !reflect.DeepEqual(got, want) {
			t.Errorf("PrometheusRule alerts %v, want %v (the file's minus %v)", got, want, disabled)
		}
		byName := map[string]Rule{}
		for _, g := range file.Groups {
			for _, r := range g.Rules {
				byName[r.Alert] = r
			}
		}
		for _, g := range f.rule.Spec.Groups {
			for _, r := range g.Rules {
				src := byName[r.Alert]
				if r.Expr != src.Expr || r.For != src.For || !reflect.DeepEqual(r.Annotations, src.Annotations) {
					t.Errorf("PrometheusRule alert %s differs from %s", r.Alert, rulesFile)
				}
				for k, val := range src.Labels {
					if r.Labels[k] != val {
						t.Errorf("alert %s: label %s=%q, want the file's %q", r.Alert, k, r.Labels[k], val)
					}
				}
				if m, ok := extra.(map[string]any); ok {
					for k, val := range m {
						if _, own := src.Labels[k]; !own && r.Labels[k] != val {
							t.Errorf("alert %s: label %s=%q, want ruleLabels' %q", r.Alert, k, r.Labels[k], val)
						}
					}
				}
			}
		}
		ns, _ := v.PathValue("metrics.prometheusRule.namespace")
		if s, _ := ns.(string); s != "" && f.rule.Metadata.Namespace != s || s == "" && f.rule.Metadata.Namespace != Release.Namespace {
			t.Errorf("PrometheusRule namespace %q (values: %q)", f.rule.Metadata.Namespace, ns)
		}
		checkLabels(t, "PrometheusRule", f.rule.Metadata.Labels, v, "metrics.prometheusRule.labels")
	}

	boardOn, _ := v.PathValue("metrics.grafanaDashboard.enabled")
	if boardOn != true {
		if f.board != nil {
			t.Error("dashboard ConfigMap rendered while metrics.grafanaDashboard.enabled is off")
		}
		return
	}
	if f.board == nil {
		t.Fatal("metrics.grafanaDashboard.enabled but no dashboard ConfigMap")
	}
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.board.Data["joinery-dashboard.json"]; strings.TrimRight(got, "\n") != strings.TrimRight(string(b), "\n") {
		t.Errorf("dashboard ConfigMap data differs from %s (%d bytes, want %d)", dashboardFile, len(got), len(b))
	}
	if f.board.Name != f.sts.Name+"-dashboard" {
		t.Errorf("dashboard ConfigMap %q, want %q", f.board.Name, f.sts.Name+"-dashboard")
	}
	checkLabels(t, "dashboard ConfigMap", f.board.Labels, v, "metrics.grafanaDashboard.labels")
}

func checkLabels(t *testing.T, what string, got map[string]string, v chartutil.Values, path string) {
	t.Helper()
	want, _ := v.PathValue(path)
	m, _ := want.(map[string]any)
	for k, val := range m {
		if got[k] != val {
			t.Errorf("%s: label %s=%q, want %q (%s)", what, k, got[k], val, path)
		}
	}
	if got["app.kubernetes.io/name"] == "" {
		t.Errorf("%s lacks the chart's labels: %v", what, got)
	}
}

func toStrings(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// TestMonitoringDefaults: the default values switch the rules and the
// dashboard off, and the sidecar label is the default's when on.
func TestMonitoringDefaults(t *testing.T) {
	ch := loadChart(t)
	f := render(t, ch, nil)
	if f.rule != nil || f.board != nil {
		t.Fatal("default values render a PrometheusRule or a dashboard")
	}
	f = render(t, ch, mustYAML(t, "metrics: {prometheusRule: {enabled: true}, grafanaDashboard: {enabled: true}}"))
	if f.rule == nil || f.board == nil {
		t.Fatal("enabled, but no PrometheusRule or dashboard")
	}
	if f.board.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v: want the sidecar's grafana_dashboard: \"1\"", f.board.Labels)
	}
	if f.rule.Metadata.Namespace != Release.Namespace || f.board.Namespace != Release.Namespace {
		t.Errorf("namespaces %q, %q; want the release's %q", f.rule.Metadata.Namespace, f.board.Namespace, Release.Namespace)
	}
	if got, want := alertNames(f.rule.Spec), alertNames(readRules(t)); !reflect.DeepEqual(got, want) {
		t.Errorf("PrometheusRule alerts %v, want every alert of the file %v", got, want)
	}
	// Disabling every alert leaves no empty group behind.
	all, _ := json.Marshal(alertNames(readRules(t)))
	f = render(t, ch, mustYAML(t, `metrics: {prometheusRule: {enabled: true, disabled: `+string(all)+`}}`))
	if f.rule == nil || len(f.rule.Spec.Groups) != 0 {
		t.Errorf("every alert disabled: groups %+v, want none", f.rule)
	}
	if _, err := Render(ch, mustYAML(t, "metrics: {prometheusRule: {disabled: [JoineryNoSuchAlert]}}")); err == nil {
		t.Error("the schema let an unknown alert name through in metrics.prometheusRule.disabled")
	}
}

// TestRulesSchemaEnum: the schema's list of alert names (for
// metrics.prometheusRule.disabled) is the rules file's.
func TestRulesSchemaEnum(t *testing.T) {
	ch := loadChart(t)
	var s struct {
		Properties struct {
			Metrics struct {
				Properties struct {
					PrometheusRule struct {
						Properties struct {
							Disabled struct {
								Items struct {
									Enum []string `json:"enum"`
								} `json:"items"`
							} `json:"disabled"`
						} `json:"properties"`
					} `json:"prometheusRule"`
				} `json:"properties"`
			} `json:"metrics"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(ch.Schema, &s); err != nil {
		t.Fatal(err)
	}
	got := s.Properties.Metrics.Properties.PrometheusRule.Properties.Disabled.Items.Enum
	if want := alertNames(readRules(t)); !reflect.DeepEqual(got, want) {
		t.Errorf("values.schema.json metrics.prometheusRule.disabled enum %v, want the alerts of %s %v", got, rulesFile, want)
	}
}

// TestMonitoringFilesLinked: deploy/prometheus and deploy/grafana hold links
// to the chart's files, not copies.
func TestMonitoringFilesLinked(t *testing.T) {
	for link, target := range map[string]string{
		"../prometheus/joinery-rules.yaml":  rulesFile,
		"../grafana/joinery-dashboard.json": dashboardFile,
	} {
		fi, err := os.Lstat(link)
		if err != nil {
			t.Fatal(err)
		}
		got, err := filepath.EvalSymlinks(link)
		want, err2 := filepath.EvalSymlinks(target)
		if fi.Mode()&os.ModeSymlink == 0 || err != nil || err2 != nil || got != want {
			t.Errorf("%s: want a symbolic link to %s (mode %v, resolves to %q, %v %v)", link, target, fi.Mode(), got, err, err2)
		}
	}
}

// TestRulesUnitTests: every alert has a promtool unit test in which it
// fires and an evaluation at which it must not, and a section in
// docs/operations/alerts.md.
func TestRulesUnitTests(t *testing.T) {
	b, err := os.ReadFile(rulesTests)
	if err != nil {
		t.Fatal(err)
	}
	var tf struct {
		RuleFiles []string `json:"rule_files"`
		Tests     []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(b, &tf); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tf.RuleFiles, []string{"joinery-rules.yaml"}) {
		t.Errorf("%s tests rule_files %v, want [joinery-rules.yaml]", rulesTests, tf.RuleFiles)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tf.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	ops, err := os.ReadFile("../../docs/operations/alerts.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alertNames(readRules(t)) {
		if !fires[a] || !quiet[a] {
			t.Errorf("alert %s: a unit test where it fires %v, one where it does not %v; want both", a, fires[a], quiet[a])
		}
		if !strings.Contains(string(ops), "### "+a+"\n") {
			t.Errorf("docs/operations/alerts.md has no section \"### %s\"", a)
		}
	}
}

// promtool returns the path of promtool; without it the test is skipped,
// except on CI (CI=true), where it fails: .ci/run installs it (Debian
// package prometheus).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not found on CI: .ci/run installs it (apt-get install prometheus)")
		}
		t.Skip("promtool not found (Debian: apt-get install prometheus); CI=true makes this a failure")
	}
	return p
}

func runPromtool(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(promtool(t), args...).CombinedOutput()
	if err != nil {
		t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	} else {
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
}

// TestPrometheusRules checks the rules file and runs its unit tests with
// promtool, and checks the rules the chart renders (full values: labels
// added, an alert left out) as promtool would load them.
func TestPrometheusRules(t *testing.T) {
	runPromtool(t, "check", "rules", rulesFile)
	runPromtool(t, "test", "rules", rulesTests)

	f := render(t, loadChart(t), readValues(t, "testdata/full-values.yaml"))
	if f.rule == nil {
		t.Fatal("full values render no PrometheusRule")
	}
	b, err := yaml.Marshal(f.rule.Spec)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "rendered-rules.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, "check", "rules", p)
}

// TestDashboard: the dashboard is Grafana JSON whose panels all query the
// data source variable, with unique ids, and whose queries are PromQL on
// the node's metrics (that each exists on a node's /metrics is node's
// TestMetricsCatalog).
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID        string `json:"uid"`
		Title      string `json:"title"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID         int    `json:"id"`
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource *struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard uid %q title %q", d.UID, d.Title)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" {
		t.Errorf("no datasource variable: %v", vars)
	}
	ids, queries := map[int]bool{}, 0
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d targets; want ${datasource} and a query", p.Title, p.Datasource, len(p.Targets))
		}
		for _, q := range p.Targets {
			queries++
			if !strings.Contains(q.Expr, "joinery_") || !strings.Contains(q.Expr, `instance=~"$instance"`) {
				t.Errorf("panel %q query %q: want a joinery_ metric filtered by the instance variable", p.Title, q.Expr)
			}
		}
	}
	if queries < 10 {
		t.Errorf("%d queries", queries)
	}
}
