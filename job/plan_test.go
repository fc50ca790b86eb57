package job

import (
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/joinery/joinery/record"
)

// TestJobCompilePlan: Compile returns the join as the machine spec the key
// core takes (exactly one of CDC, Multi, NewTimed), the compiled key
// expressions and filters, and the settings with their defaults applied.
func TestJobCompilePlan(t *testing.T) {
	for _, c := range []struct {
		name, yml              string
		cdc, multi, timed, evt bool
		keyExpr, filter        bool
		timeout                time.Duration
		budget                 int64
		gossip                 bool
	}{
		{name: "cdc", yml: `name: c
join: {type: cdc, left: {name: l, pk: id, join_on: id}, right: {name: r, pk: id, join_on: lid}, project: [{name: a, from: l.id}]}
sources: [{name: s, type: file, path: x.jsonl, tables: {l: left, r: right}, filter: 'id > 1'}]
cluster: {request_timeout: 5s, secret_key: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=}
state: {memory_budget: "0"}
`, cdc: true, filter: true, timeout: 5 * time.Second, budget: -1, gossip: true},
		{name: "multi", yml: `name: m
join: {type: cdc-multi, tables: [{name: a, pk: id, join_on: id}, {name: b, pk: id, join_on: aid}]}
sources: [{name: s, type: file, path: x.jsonl, tables: {a: a, b: b}}]
`, multi: true, timeout: DefaultRequestTimeout},
		{name: "window", yml: `name: w
join: {type: window, window: {type: tumbling, size: 1s}, left: {name: l, key_expr: 'k + "x"', ts: ts}, right: {name: r, key: k, ts: ts}}
sources: [{name: s, type: file, path: x.jsonl, side: left, watermark: {max_out_of_orderness: 2s}}]
state: {memory_budget: 1MiB}
`, timed: true, evt: true, keyExpr: true, timeout: DefaultRequestTimeout, budget: 1 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(c.yml))
			if err != nil {
				t.Fatal(err)
			}
			p, err := Compile(s)
			if err != nil {
				t.Fatal(err)
			}
			if (p.CDC != nil) != c.cdc || (p.Multi != nil) != c.multi || (p.NewTimed != nil) != c.timed || (p.EventTime != nil) != c.evt {
				t.Errorf("join: cdc %v multi %v timed %v event time %v", p.CDC != nil, p.Multi != nil, p.NewTimed != nil, p.EventTime != nil)
			}
			if (p.KeyExpr(record.Left) != nil) != c.keyExpr || p.KeyExpr(record.Right) != nil {
				t.Errorf("key exprs %v", p.KeyExprs)
			}
			if len(p.Sources) != 1 || (p.Sources[0].Filter != nil) != c.filter {
				t.Errorf("sources %+v", p.Sources)
			}
			if p.RequestTimeout != c.timeout || p.MemoryBudget != c.budget || (len(p.GossipKey) == 32) != c.gossip {
				t.Errorf("timeout %v budget %d gossip key %d bytes", p.RequestTimeout, p.MemoryBudget, len(p.GossipKey))
			}
			if c.evt && (p.EventTime.MaxOutOfOrderness != 2*time.Second || len(p.EventTime.Sources) != 1) {
				t.Errorf("event time %+v", p.EventTime)
			}
		})
	}
	if _, err := Compile(&Spec{Name: "bad"}); err == nil {
		t.Error("Compile took a job without a join type")
	}
}

// TestJobCompileJoin: the join section compiles alone (replay's use), and
// reports what Validate reports of it.
func TestJobCompileJoin(t *testing.T) {
	for _, c := range []struct {
		name, join, err string
		conditioned     bool
	}{
		{"window with a condition", `{type: window, window: {type: tumbling, size: 1s}, condition: 'left.a == right.a', left: {name: left, key: k, ts: ts}, right: {name: right, key: k, ts: ts}}`, "", true},
		{"cdc", `{type: cdc, left: {name: l, pk: id, join_on: id}, right: {name: r, pk: id, join_on: lid}}`, "", false},
		{"cdc right", `{type: cdc, mode: right, left: {name: l, pk: id, join_on: id}, right: {name: r, pk: id, join_on: lid}}`, "", false},
		{"cdc condition", `{type: cdc, mode: full, condition: 'l.tier >= r.min_tier', right_condition: r.active, left: {name: l, pk: id, join_on: id}, right: {name: r, pk: id, join_on: lid}}`, "", false},
		{"cdc condition naming another side", `{type: cdc, condition: 'x.a > 1', left: {name: l, pk: id, join_on: id}, right: {name: r, pk: id, join_on: lid}}`, "join.condition:", false},
		{"cdc condition with flink kinds", `{type: cdc, cdc: {kinds: flink}, condition: 'l.a > r.b', left: {name: l, pk: id, join_on: id}, right: {name: r, pk: id, join_on: lid}}`, "", false},
		{"cdc many-to-many", `{type: cdc, mode: full, cdc: {kinds: kafka}, condition: 'l.a > r.b', left: {name: l, pk: id, join_on: grp}, right: {name: r, pk: id, join_on: grp}}`, "", false},
		{"cdc late rule", `{type: cdc, late: {rule: none}, left: {name: l, pk: id, join_on: id}, right: {name: r, pk: id, join_on: lid}}`, "join.late.rule: only for", false},
		{"unknown type", `{type: nope}`, "join.type: must be cdc, cdc-multi", false},
		{"bad mode", `{type: cdc, mode: outer, left: {name: l, pk: id, join_on: id}, right: {name: r, pk: id, join_on: lid}}`, "join.mode: must be inner, left, right or full", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s Spec
			if err := yaml.Unmarshal([]byte("join: "+c.join), &s); err != nil {
				t.Fatal(err)
			}
			jp, err := s.CompileJoin(nil)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if jp.Conditioned != c.conditioned {
				t.Errorf("conditioned %v, want %v", jp.Conditioned, c.conditioned)
			}
			if jp.CDC != nil && (s.Join.Condition != "") == jp.CDC.Where.IsZero() {
				t.Errorf("cdc condition %q compiled to %+v", s.Join.Condition, jp.CDC.Where)
			}
		})
	}
}

// TestJobCompileAddrs: cluster.remote and cluster.gossip are split, with
// the default host; a bad port is a job error.
func TestJobCompileAddrs(t *testing.T) {
	s, err := Parse([]byte(good + "cluster: {remote: ':7001', gossip: '10.0.0.1:7002', insecure: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	if p.Remote != (HostPort{DefaultHost, 7001}) || p.Gossip != (HostPort{"10.0.0.1", 7002}) {
		t.Errorf("remote %+v gossip %+v", p.Remote, p.Gossip)
	}
	if _, err := Parse([]byte(good + "cluster: {remote: '127.0.0.1:x'}\n")); err == nil || !strings.Contains(err.Error(), `cluster.remote: bad port "x"`) {
		t.Errorf("bad port: %v", err)
	}
}
