package node_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// refLines reads a JSON-lines file of examples/replay/<name>/ as maps.
func refLines(t *testing.T, name, file string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "examples", "replay", name, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// byKey groups formatted outputs by key, keeping each key's order.
type byKey map[string][]string

func (b byKey) String() string {
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var s strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&s, "key %s:\n  %s\n", k, strings.Join(b[k], "\n  "))
	}
	return s.String()
}

// vOf is a row's "v", or "null" for a padded side.
func vOf(row any) string {
	if m, ok := row.(map[string]any); ok {
		return fmt.Sprint(m["v"])
	}
	return "null"
}

// TestNodeKafkaCDCKinds runs ref-kstreams-ktable-ktable-left-old-values (a
// cdc join with cdc: {kinds: kafka, ts: max}, Kafka Streams'
// KTable-KTable left join sending old values) on a node, its input written
// as Debezium envelopes of one source: each key's changelog (kinds, rows,
// times, in seq order) is replay's expected.jsonl for that key, so a padded
// row turning into a match is one -U/+U pair on a node too.
func TestNodeKafkaCDCKinds(t *testing.T) {
	const name = "ref-kstreams-ktable-ktable-left-old-values"
	dir := t.TempDir()
	var in [][]byte
	for _, l := range refLines(t, name, "input.jsonl") {
		side, ok := l["side"].(string)
		if !ok {
			continue
		}
		env := map[string]any{"op": l["op"], "before": l["before"], "after": l["after"], "ts_ms": l["ts_ms"],
			"source": map[string]any{"table": map[string]string{"left": "table1", "right": "table2"}[side]}}
		b, _ := json.Marshal(env)
		in = append(in, b)
	}
	writeLines(t, filepath.Join(dir, "in.jsonl"), in)
	n := start(t, parse(t, dir, `name: kafkakinds
join:
  type: cdc
  mode: left
  cdc: {kinds: kafka, ts: max}
  left:  {name: table1, pk: id, join_on: id}
  right: {name: table2, pk: id, join_on: id}
sources: [{name: cdc, type: file, path: in.jsonl, tables: {table1: left, table2: right}, on_bad_input: skip}]
sinks: [{type: file, path: out.jsonl}]
`))
	run(t, n)
	want := byKey{}
	for _, l := range refLines(t, name, "expected.jsonl") {
		lm, _ := l["left"].(map[string]any)
		key := fmt.Sprint(lm["id"])
		want[key] = append(want[key], fmt.Sprintf("%v %v %s+%s", l["op"], l["ts"], vOf(l["left"]), vOf(l["right"])))
	}
	lines := readOut(t, filepath.Join(dir, "out.jsonl"))
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].Seq < lines[j].Seq })
	got := byKey{}
	for _, l := range lines {
		lm, _ := l.Row["table1"].(map[string]any)
		key := fmt.Sprint(lm["id"])
		got[key] = append(got[key], fmt.Sprintf("%s %d %s+%s", l.Op, l.Ts, vOf(l.Row["table1"]), vOf(l.Row["table2"])))
	}
	if got.String() != want.String() {
		t.Errorf("node outputs per key:\n%s\nreplay's (expected.jsonl):\n%s", got, want)
	}
}
