package node_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/joinery/joinery/replay"
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

// TestNodeKafkaVersioned runs the versioned KStream-KTable join (type
// temporal, temporal: {semantics: kafka, grace, history}) on a node and
// replay over the same records: stream records out of order within and
// beyond the grace, null keys (KIP-962: padded in a left join), table
// tombstones (op -D), table records out of order by less than the grace.
// The node reads the two files concurrently, in no fixed interleaving; the
// join makes that immaterial here (its watermark, the minimum of both
// sources', reaches t + grace only once the table source has read a record
// later than t + grace, hence every record at t or before; the history is
// long), so every record's output is fixed: the node's outputs equal
// replay's (the table first, then the stream with its stream time as the
// watermark after each record), as a multiset. Some records wait for the
// grace and some join at once on both.
func TestNodeKafkaVersioned(t *testing.T) {
	for _, mode := range []string{"left", "inner"} {
		t.Run(mode, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 8))
			dir := t.TempDir()
			var table, stream [][]byte
			var in strings.Builder // replay's input
			line := func(m map[string]any) []byte { b, _ := json.Marshal(m); return b }
			tableMax, disorder := int64(-1), 0
			for i := range 150 {
				// Out of order by less than the grace: a record at x comes
				// before every one later than x + grace, so the table
				// source is past x before any record at x is released.
				ts := int64(i*7 + r.IntN(20))
				if ts < tableMax {
					disorder++
				}
				tableMax = max(tableMax, ts)
				k := fmt.Sprint("k", r.IntN(5))
				row := map[string]any{"k": k, "ts": ts, "v": fmt.Sprint("y", i)}
				rl := map[string]any{"side": "right", "key": k, "ts": ts, "value": row["v"]}
				if r.IntN(6) == 0 {
					row["op"], rl["op"] = "-D", "-D"
					delete(rl, "value")
				}
				table = append(table, line(row))
				in.Write(append(line(rl), '\n'))
			}
			streamTime, behind := int64(-1), 0
			for i := range 300 {
				ts := int64(i*3 + r.IntN(60)) // up to 60 ms out of order, against a 20 ms grace
				row := map[string]any{"k": fmt.Sprint("k", r.IntN(6)), "ts": ts, "v": fmt.Sprint("x", i)}
				rl := map[string]any{"side": "left", "key": row["k"], "ts": ts, "value": row["v"]}
				if r.IntN(15) == 0 {
					delete(row, "k")
					rl["key"] = nil
				}
				if ts+20 <= streamTime {
					behind++
				}
				streamTime = max(streamTime, ts)
				stream = append(stream, line(row))
				in.Write(append(line(rl), '\n'))
				in.Write(append(line(map[string]any{"watermark": streamTime}), '\n'))
			}
			if behind < 20 || disorder < 20 {
				t.Fatalf("%d stream records behind the grace, %d table records out of order: the input does not test them", behind, disorder)
			}
			writeLines(t, filepath.Join(dir, "table.jsonl"), table)
			writeLines(t, filepath.Join(dir, "stream.jsonl"), stream)
			jobYAML := `name: versioned
join:
  type: temporal
  mode: ` + mode + `
  temporal: {semantics: kafka, grace: 20ms, history: 1h}
  left:  {name: s, key: k, ts: ts}
  right: {name: tb, key: k, ts: ts, kind: op}
  project: [{name: lv, from: s.v}, {name: rv, from: tb.v}]
sources:
  - {name: tbs, type: file, path: table.jsonl, side: right}
  - {name: ss, type: file, path: stream.jsonl, side: left, on_bad_input: skip}
sinks: [{type: file, path: out.jsonl}]
`
			n := start(t, parse(t, dir, jobYAML))
			run(t, n)
			var got []string
			for _, l := range readOut(t, filepath.Join(dir, "out.jsonl")) {
				got = append(got, fmt.Sprintf("%v|%v|%d", l.Row["lv"], l.Row["rv"], l.Ts))
			}
			jb, err := replay.ParseJob([]byte(jobYAML))
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			if _, err := replay.RunEvents(jb, strings.NewReader(in.String()), &out, replay.Options{Late: io.Discard}); err != nil {
				t.Fatal(err)
			}
			var want []string
			padded, nullKeys := 0, 0
			for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var o struct {
					Left, Right any
					Ts          int64
				}
				if err := json.Unmarshal([]byte(l), &o); err != nil {
					t.Fatal(err)
				}
				if o.Right == nil {
					o.Right, padded = "<nil>", padded+1
				}
				want = append(want, fmt.Sprintf("%v|%v|%d", o.Left, o.Right, o.Ts))
			}
			for _, s := range stream {
				if !strings.Contains(string(s), `"k"`) {
					nullKeys++
				}
			}
			sort.Strings(got)
			sort.Strings(want)
			if extra, missing := multisetDiff(got, want); len(extra)+len(missing) > 0 {
				t.Errorf("node outputs (%d) differ from replay's (%d):\nonly on the node: %v\nonly in replay:   %v", len(got), len(want), extra, missing)
			}
			if mode == "left" && (len(want) != len(stream) || padded <= nullKeys) {
				t.Errorf("left: %d outputs for %d stream records, %d padded (%d null keys)", len(want), len(stream), padded, nullKeys)
			}
			t.Logf("%d outputs, %d padded, %d null keys, %d behind the grace, %d table records out of order", len(got), padded, nullKeys, behind, disorder)
		})
	}
}

// multisetDiff returns the elements of a not in b and those of b not in a,
// counting repeats.
func multisetDiff(a, b []string) (onlyA, onlyB []string) {
	n := map[string]int{}
	for _, s := range a {
		n[s]++
	}
	for _, s := range b {
		n[s]--
	}
	for s, c := range n {
		for ; c > 0; c-- {
			onlyA = append(onlyA, s)
		}
		for ; c < 0; c++ {
			onlyB = append(onlyB, s)
		}
	}
	sort.Strings(onlyA)
	sort.Strings(onlyB)
	return onlyA, onlyB
}
