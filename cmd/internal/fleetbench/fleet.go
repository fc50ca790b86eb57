package fleetbench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
)

// expect is the nodes' cluster.expect in a fleet of n: n, or 0 with NoExpect.
func (c Config) expect(n int) int {
	if c.NoExpect {
		return 0
	}
	return n
}

// inputs turns a workload's lines into input records of their table,
// with the Kafka key (table:id), the primary key ([id]) and the join key
// ([join column]) a feeder routes them by. byJoinKey: a change that moves
// a row to another join key becomes a delete and a create first, as
// Debezium emits them when a message key column changes (cdcgen.ByJoinKey).
func inputs(w *workload, byJoinKey bool) ([]msg, error) {
	lines := w.lines
	if byJoinKey {
		keyed, err := cdcgen.ByJoinKey(w.lines, w.joinCols)
		if err != nil {
			return nil, fmt.Errorf("%s input: %w", w.name, err)
		}
		lines = make([][]byte, len(keyed))
		for i, k := range keyed {
			lines[i] = k.Line
		}
	}
	out := make([]msg, 0, len(lines))
	for i, l := range lines {
		var env struct {
			Before map[string]json.RawMessage `json:"before"`
			After  map[string]json.RawMessage `json:"after"`
			Source struct {
				Table string `json:"table"`
			} `json:"source"`
		}
		if err := json.Unmarshal(l, &env); err != nil {
			return nil, fmt.Errorf("%s input line %d: %w", w.name, i, err)
		}
		row := env.After
		if row == nil {
			row = env.Before
		}
		id := row["id"]
		if len(id) == 0 || (env.Source.Table != w.left && env.Source.Table != w.right) {
			return nil, fmt.Errorf("%s input line %d has no row with an id or another table than %s and %s: %s", w.name, i, w.left, w.right, l)
		}
		jk := row[w.joinCols[env.Source.Table]]
		out = append(out, msg{table: env.Source.Table, key: fmt.Appendf(nil, "%s:%s", env.Source.Table, id), pk: fmt.Appendf(nil, "[%s]", id),
			jk: fmt.Appendf(nil, "[%s]", jk), value: l})
	}
	return out, nil
}

// topic is the Kafka topic of name in run run, and the base name of its
// shard streams.
func topic(name string, run int) string { return fmt.Sprintf("%s-%d", name, run) }

// kafkaSources is the sources: section of a node's job on the tables'
// topics, one consumer group per topic.
func kafkaSources(w *workload, run int, broker string) string {
	src := func(table, side string) string {
		return fmt.Sprintf("  - {name: %s, type: kafka, side: %s, kafka: {brokers: [%q], topic: %s, group: %s, start_offset: earliest}}\n",
			table, side, broker, topic(table, run), group(table, run))
	}
	return "sources:\n" + src(w.left, "left") + src(w.right, "right")
}

// nodeConfig is node i's (1-based) job file of run run of w, reading the
// sources srcs (kafkaSources, streamsSources).
// expect is cluster.expect (0: none).
func nodeConfig(w *workload, run, i int, srcs, broker string, redis []string, gossip, seed, admin, expect int) string {
	q := func(ss []string) string {
		b, _ := json.Marshal(ss)
		return string(b)
	}
	return w.join + srcs + fmt.Sprintf(`sinks:
  - {type: kafka, format: changelog, kafka: {brokers: [%[1]q], topic: %[2]s}}
state: {store: redis, redis: {cluster: {addrs: %[3]s}}}
cluster: {node_name: n%[4]d, gossip: "127.0.0.1:%[5]d", remote: "127.0.0.1:0", seeds: ["127.0.0.1:%[6]d"], profile: local, request_timeout: 5s%[8]s}
admin: {addr: "127.0.0.1:%[7]d", pprof: true}
`, broker, topic("out", run), q(redis), i, gossip, seed, admin, expectField(expect))
}

// expectField is nodeConfig's cluster.expect entry: none for 0 (a binary
// from before the setting reads the file too).
func expectField(expect int) string {
	if expect == 0 {
		return ""
	}
	return fmt.Sprintf(", expect: %d", expect)
}

// node is one running joinery node of a fleet.
type node struct {
	proc  *Proc
	cg    *Cgroup
	admin string // http://127.0.0.1:port
}

func (c Config) startFleet(ctx context.Context, w *workload, run, n int, dir, srcs, broker string, redis []string) ([]*node, error) {
	var nodes []*node
	seed := 0
	for i := 1; i <= n; i++ {
		gossip, err := testutil.PickPort()
		if err != nil {
			return nodes, err
		}
		admin, err := testutil.PickPort()
		if err != nil {
			return nodes, err
		}
		if i == 1 {
			seed = gossip
		}
		name := fmt.Sprintf("n%d", i)
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(nodeConfig(w, run, i, srcs, broker, redis, gossip, seed, admin, c.expect(n))), 0o644); err != nil {
			return nodes, err
		}
		var cg *Cgroup // none for the trickle row: no CPU cap
		if c.quota() > 0 {
			if cg, err = MakeCgroup(CgroupRoot, "joinery-bench", fmt.Sprintf("node%d", i), c.QuotaCPU, c.PeriodUs); err != nil {
				return nodes, err
			}
		}
		level := c.NodeLogLevel
		if level == "" {
			level = "warn"
		}
		p, err := StartProc(dir, name, cg, c.Joinery, "run", "--config", name+".yaml", "--log-level", level)
		if err != nil {
			_ = cg.Remove()
			return nodes, err
		}
		nodes = append(nodes, &node{proc: p, cg: cg, admin: fmt.Sprintf("http://127.0.0.1:%d", admin)})
	}
	for _, nd := range nodes {
		err := testutil.Poll(ctx, 2*time.Minute, pollEvery, nd.proc.Name+" sees the whole fleet", func() error {
			if !nd.proc.Running() {
				return fmt.Errorf("%s exited (see %s)", nd.proc.Name, nd.proc.Log)
			}
			var ms []json.RawMessage
			if err := getJSON(ctx, nd.admin+"/v1/members", &ms); err != nil {
				return err
			}
			if len(ms) != n {
				return fmt.Errorf("%d of %d members", len(ms), n)
			}
			return nil
		})
		if err != nil {
			return nodes, err
		}
	}
	return nodes, nil
}

// stopFleet stops the nodes and removes their cgroups.
func (c Config) stopFleet(nodes []*node) {
	for _, nd := range nodes {
		nd.proc.Stop(30 * time.Second)
	}
	for _, nd := range nodes {
		if err := nd.cg.Remove(); err != nil {
			c.logf("%v", err)
		}
	}
}
