package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gopkg.in/yaml.v3"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
)

// The chart's alerting rules and Grafana dashboard (one copy each; the
// deploy/prometheus and deploy/grafana files link to them).
const (
	rulesFile     = "../deploy/helm/joinery/files/joinery-rules.yaml"
	dashboardFile = "../deploy/helm/joinery/files/joinery-dashboard.json"
)

// metricName matches the metric names a PromQL expression of ours can use:
// the node's own (joinery_*) and its runtime and process collectors'.
var metricName = regexp.MustCompile(`\b(?:joinery|process|go)_[a-zA-Z0-9_]+\b`)

// TestMetricsCatalog starts real nodes, feeds them input that makes every
// kind of event happen once (records joined, a bad record dead-lettered, key actors activated and snapshots written), scrapes their
// /metrics over HTTP and checks that every metric name the alerting rules'
// and the dashboard's queries use is there as a sample line (a series, not
// just a declaration: client_golang prints a Vec only once it has one).
// Three nodes because some metrics are store or source specific: an
// event-time job on Redis (joinery_store_rollbacks_total comes with the
// store's lineage guard; watermarks come with event time), a changelog job
// on the embedded store (joinery_state_bytes is its held state) and one
// reading a Redis stream (joinery_source_lag_records).
func TestMetricsCatalog(t *testing.T) {
	want := map[string][]string{} // metric name -> where it is used
	for _, e := range ruleExprs(t) {
		for _, m := range metricName.FindAllString(e, -1) {
			want[m] = append(want[m], "rules")
		}
	}
	for _, e := range dashboardExprs(t) {
		for _, m := range metricName.FindAllString(e, -1) {
			want[m] = append(want[m], "dashboard")
		}
	}
	if len(want) < 10 {
		t.Fatalf("only %d metric names in the rules and the dashboard: %v", len(want), want)
	}

	timed, timedBody := scrape(t, timedNode(t))
	changelog, changelogBody := scrape(t, changelogNode(t))
	stream := streamNode(t)
	// The metrics this test's input must have moved, with their values.
	for _, c := range []struct{ body, line string }{
		{timedBody, `joinery_dead_letters_total{job="windows",source="ls"} 1`},
		{timedBody, `joinery_dead_letters_total{job="windows",source="rs"} 0`},
		{changelogBody, fmt.Sprintf(`joinery_dead_letters_total{job="mixed",source="cdc"} %d`, len(mixedDeadLetters()))},
		{changelogBody, `joinery_source_lost_ranges_total{job="mixed",source="cdc"} 0`},
		{changelogBody, `joinery_source_revoke_timeouts_total{job="mixed",source="cdc"} 0`},
		{changelogBody, `joinery_state_over_budget{job="mixed"} 0`},
	} {
		if !strings.Contains(c.body, c.line+"\n") {
			t.Errorf("/metrics has no line %q", c.line)
		}
	}
	// The global watermark: the last events are at 20.0 s (left) and
	// 20.5 s (right), 1 s out of orderness allowed.
	var wm float64
	if _, err := fmt.Sscanf(sampleLine(timedBody, `joinery_watermark_seconds{job="windows"} `), `joinery_watermark_seconds{job="windows"} %g`, &wm); err != nil || wm < 10 || wm > 20 {
		t.Errorf("joinery_watermark_seconds = %v (%v), want between 10 and 20", wm, err)
	}

	have := map[string][]string{} // sample name -> the nodes exposing it
	for name, samples := range map[string]map[string]bool{"event-time on redis": timed, "changelog embedded": changelog, "redis stream": stream} {
		for s := range samples {
			have[s] = append(have[s], name)
		}
	}
	var missing []string
	for m, where := range want {
		if len(have[m]) == 0 {
			missing = append(missing, fmt.Sprintf("%s (%s)", m, strings.Join(dedup(where), ", ")))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("metrics used by the rules or the dashboard but not on a node's /metrics:\n  %s", strings.Join(missing, "\n  "))
	}
	t.Logf("%d metric names checked", len(want))
}

// timedNode runs a 10-second tumbling window join on Redis state with a
// dead-letter file: 40 good events and one not JSON. (No late event: with
// two file sources read concurrently, whether one is late depends on how
// far the other source has got; joinery_late_total is on /metrics at 0
// from the start, see admin.Metrics.InitJob.)
func timedNode(t *testing.T) *node.Node {
	dir := t.TempDir()
	var left, right [][]byte
	for i := range 20 {
		left = append(left, fmt.Appendf(nil, `{"k":"k%d","ts":%d,"v":"l%d"}`, i%4, 1000+i*1000, i))
		right = append(right, fmt.Appendf(nil, `{"k":"k%d","ts":%d,"v":"r%d"}`, i%4, 1500+i*1000, i))
	}
	left = append(left, []byte(`{"k":"k1","ts":`)) // not JSON: dead-lettered
	writeLines(t, filepath.Join(dir, "left.jsonl"), left)
	writeLines(t, filepath.Join(dir, "right.jsonl"), right)
	rs := testutil.StartRedis(t)
	n := start(t, parse(t, dir, fmt.Sprintf(`name: windows
join:
  type: window
  mode: inner
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}
  window: {type: tumbling, size: 10s}
  project: [{name: lv, from: l.v}, {name: rv, from: r.v}]
sources:
  - {name: ls, type: file, path: left.jsonl, side: left, watermark: {max_out_of_orderness: 1s}}
  - {name: rs, type: file, path: right.jsonl, side: right, watermark: {max_out_of_orderness: 1s}}
sinks: [{type: table}]
dead_letter: dead.jsonl
state: {store: redis, redis: {addr: %q}}
admin: {addr: "127.0.0.1:0", insecure: true}
`, rs.Addr)))
	run(t, n)
	st := n.Stats()
	if st.DeadLettered.Load() != 1 || st.Out.Load() == 0 {
		t.Fatalf("window job: dead-lettered %d, outputs %d; want 1 dead letter and outputs", st.DeadLettered.Load(), st.Out.Load())
	}
	return n
}

// changelogNode runs the mixed Debezium file (good and bad records) on the
// embedded store with a dead-letter file.
func changelogNode(t *testing.T) *node.Node {
	dir := t.TempDir()
	writeMixed(t, dir)
	n := start(t, parse(t, dir, "name: mixed\n"+joinYAML+fmt.Sprintf(mixedSource, "")+
		"dead_letter: dead.jsonl\nadmin: {addr: \"127.0.0.1:0\", insecure: true}\n"))
	run(t, n)
	return n
}

// streamNode runs a changelog job reading a Redis stream at 40 records a
// second, its lag asked every 50ms, and returns the sample names of its
// /metrics once its lag was seen above 0 and then at 0 (every entry
// committed).
func streamNode(t *testing.T) map[string]bool {
	rs := testutil.StartRedis(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	h := cdcgen.Generate(cdcgen.Config{Seed: 3, Users: 5, Domains: 10, Changes: 60})
	xadd(t, rc, "cdc", h.Lines)
	spec := parse(t, t.TempDir(), "name: lagging\n"+joinYAML+fmt.Sprintf(`
state: {store: redis, redis: {addr: %[1]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, group: joinery, rate: 40, tables: {users: left, domains: right}}]
sinks: [{type: table}]
admin: {addr: "127.0.0.1:0", insecure: true}
`, rs.Addr))
	n, err := node.Start(context.Background(), spec, node.Options{Logger: testLogger(t), Stdout: io.Discard, SourceLagEvery: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("run: %v", err)
		}
	}()
	const lag = `joinery_source_lag_records{job="lagging",partition="cdc/0",source="cdc"} `
	var seen []string
	testutil.WaitFor(t, 60*time.Second, func() error {
		_, body := scrape(t, n)
		if l := sampleLine(body, lag); l != "" {
			if v := strings.TrimPrefix(l, lag); len(seen) == 0 || seen[len(seen)-1] != v {
				seen = append(seen, v)
			}
		}
		if len(seen) == 0 || seen[len(seen)-1] != "0" {
			return fmt.Errorf("joinery_source_lag_records went %v, not yet to 0", seen)
		}
		return nil
	})
	t.Logf("joinery_source_lag_records went %v", seen)
	if seen[0] == "0" {
		t.Errorf("joinery_source_lag_records went %v: never above 0 while the node read at 40/s", seen)
	}
	names, _ := scrape(t, n)
	return names
}

// sampleLine returns the first line of body that starts with prefix.
func sampleLine(body, prefix string) string {
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// scrape GETs the node's /metrics and returns the names of its sample
// lines (a histogram's _bucket, _sum and _count lines by those names) and
// the body.
func scrape(t *testing.T, n *node.Node) (map[string]bool, string) {
	t.Helper()
	resp, err := http.Get("http://" + n.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	names := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names, string(body)
}

// ruleExprs returns the expr of every rule in the rules file.
func ruleExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert, Record, Expr string
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	var out []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Expr == "" {
				t.Errorf("%s: rule %s%s has no expr", rulesFile, r.Alert, r.Record)
			}
			out = append(out, r.Expr)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no rules", rulesFile)
	}
	return out
}

// dashboardExprs returns every query of the dashboard: the targets' expr
// and the template variables' query (a string or {query: ...}), at any
// depth (rows nest panels).
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if s, ok := c.(string); ok && (k == "expr" || k == "query" || k == "definition") {
					out = append(out, s)
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(d)
	if len(out) == 0 {
		t.Fatalf("%s: no queries", dashboardFile)
	}
	return out
}

func dedup(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
