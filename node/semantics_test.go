package node_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/node"
)

// outLine is one line of a file sink in the changelog format.
type outLine struct {
	Op  string          `json:"op"`
	PK  json.RawMessage `json:"pk"`
	Row map[string]any  `json:"row"`
	Ts  int64           `json:"ts"`
	Seq uint64          `json:"seq"`
}

func readOut(t *testing.T, path string) []outLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []outLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l outLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// TestNodeSemantics runs the modes of issue #18 items 5 and 6 through the
// key actors: the changelog join with Flink's row kinds and Kafka Streams'
// output times (cdc: {kinds: flink, ts: max}), the event-time temporal join
// with Flink's semantics (late probes joined, not dropped) and the
// processing-time temporal join, which a node now runs.
func TestNodeSemantics(t *testing.T) {
	t.Run("cdc flink kinds and max ts", func(t *testing.T) {
		h := cdcgen.Generate(cdcgen.Config{Seed: 9, Users: 20, Domains: 60, Changes: 800})
		// Source times out of arrival order, so max(input, other row) is not
		// always the input's: last[table/id] is each row's last change time.
		r := rand.New(rand.NewPCG(1, 2))
		last := map[string]int64{}
		for i, l := range h.Lines {
			var env map[string]any
			if err := json.Unmarshal(l, &env); err != nil {
				t.Fatal(err)
			}
			ts := int64(1000 + r.IntN(100000))
			env["ts_ms"] = ts
			row, _ := env["after"].(map[string]any)
			if row == nil {
				row, _ = env["before"].(map[string]any)
			}
			last[fmt.Sprint(env["source"].(map[string]any)["table"], "/", row["id"])] = ts
			h.Lines[i], _ = json.Marshal(env)
		}
		dir := t.TempDir()
		writeLines(t, filepath.Join(dir, "in.jsonl"), h.Lines)
		n := start(t, parse(t, dir, "name: flinkcdc\n"+strings.Replace(joinYAML, "  mode: left\n", "  mode: left\n  cdc: {kinds: flink, ts: max}\n", 1)+`
sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}}]
sinks: [{type: table}, {type: file, path: out.jsonl}]
`))
		run(t, n)
		diff(t, "table", tableMap(n.Table()), h.LeftJoin())
		lines := readOut(t, filepath.Join(dir, "out.jsonl"))
		kinds := map[string]int{}
		final := map[string]outLine{}
		for _, l := range lines {
			kinds[l.Op]++
			if l.Op == "+I" || l.Op == "+U" {
				final[string(l.PK)] = l
			} else {
				delete(final, string(l.PK))
			}
		}
		if kinds["+U"] != 0 || kinds["+I"] == 0 || kinds["-D"] == 0 {
			t.Errorf("kinds %v: a left join with Flink's kinds emits +I and -D (and -U of the inner side), never +U", kinds)
		}
		if len(final) != len(h.LeftJoin()) {
			t.Errorf("changelog folds to %d rows, want %d", len(final), len(h.LeftJoin()))
		}
		matched := 0
		for pk, l := range final {
			var ids []any
			_ = json.Unmarshal([]byte(pk), &ids)
			if ids[1] == nil {
				continue
			}
			matched++
			want := max(last[fmt.Sprint("users/", ids[0])], last[fmt.Sprint("domains/", ids[1])])
			if l.Ts != want {
				t.Errorf("row %s: ts %d, want max(user's, domain's last ts_ms) = %d", pk, l.Ts, want)
			}
		}
		if matched == 0 {
			t.Error("no matched row to check the times of")
		}
		t.Logf("%d outputs %v; %d final rows, %d matched", len(lines), kinds, len(final), matched)
	})

	type ev struct {
		K  string `json:"k"`
		Ts int64  `json:"ts"`
		V  string `json:"v"`
	}
	// Probes and versions far out of order (up to 3 s) against a 200 ms
	// out-of-orderness bound: many inputs are behind the watermark.
	r := rand.New(rand.NewPCG(5, 6))
	var probes, versions []ev
	for i := range 600 {
		e := ev{K: fmt.Sprint("k", r.IntN(5)), Ts: int64(i)*50 + int64(r.IntN(3000)), V: fmt.Sprint("e", i)}
		if r.IntN(2) == 0 {
			probes = append(probes, e)
		} else {
			versions = append(versions, e)
		}
	}
	byV := map[string]ev{}
	for _, e := range append(append([]ev{}, probes...), versions...) {
		byV[e.V] = e
	}
	temporal := func(t *testing.T, join string) (lines []outLine, late int64) {
		dir := t.TempDir()
		for name, evs := range map[string][]ev{"left.jsonl": probes, "right.jsonl": versions} {
			f, _ := os.Create(filepath.Join(dir, name))
			for _, e := range evs {
				b, _ := json.Marshal(e)
				f.Write(append(b, '\n'))
			}
			f.Close()
		}
		n := start(t, parse(t, dir, `name: temporal
join:
  `+join+`
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}
  project: [{name: lv, from: l.v}, {name: rv, from: r.v}]
sources:
  - {name: ls, type: file, path: left.jsonl, side: left, watermark: {max_out_of_orderness: 200ms}}
  - {name: rs, type: file, path: right.jsonl, side: right, watermark: {max_out_of_orderness: 200ms}}
sinks: [{type: file, path: out.jsonl}]
`))
		run(t, n)
		return readOut(t, filepath.Join(dir, "out.jsonl")), n.Stats().Late.Load()
	}
	// check: every probe exactly once, stamped with its time, joined with
	// nothing or a version of its key at or before it.
	check := func(t *testing.T, lines []outLine, asOf bool) {
		t.Helper()
		seen := map[string]int{}
		for _, l := range lines {
			lv, _ := l.Row["lv"].(string)
			p, ok := byV[lv]
			if !ok || l.Op != "+I" || l.Ts != p.Ts {
				t.Fatalf("output %+v: not a probe's +I at its time", l)
			}
			seen[lv]++
			if rv, ok := l.Row["rv"].(string); ok {
				v := byV[rv]
				if v.K != p.K || (asOf && v.Ts > p.Ts) {
					t.Errorf("probe %+v joined version %+v", p, v)
				}
			}
		}
		for _, p := range probes {
			if seen[p.V] != 1 {
				t.Errorf("probe %+v emitted %d times, want once", p, seen[p.V])
			}
		}
	}
	t.Run("temporal flink semantics", func(t *testing.T) {
		_, strictLate := temporal(t, "type: temporal\n  mode: left")
		if strictLate == 0 {
			t.Fatal("the strict run dropped nothing as late: the input does not test lateness")
		}
		lines, late := temporal(t, "type: temporal\n  mode: left\n  temporal: {semantics: flink}")
		if late != 0 {
			t.Errorf("flink semantics: %d inputs late, want none", late)
		}
		check(t, lines, true)
		t.Logf("strict: %d late; flink: %d outputs, %d late", strictLate, len(lines), late)
	})
	t.Run("temporal flink changelog sides", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "left.jsonl"), []byte(`{"k":"a","ts":5,"v":"p5"}
{"k":"a","ts":5,"v":"p5","op":"-U"}
{"k":"a","ts":5,"v":"p5b","op":"+U"}
{"k":"a","ts":6,"v":"p6","op":"-D"}
{"k":"a","ts":12,"v":"p12","op":"+I"}
`), 0o644)
		os.WriteFile(filepath.Join(dir, "right.jsonl"), []byte(`{"k":"a","ts":0,"v":"v0","op":null}
{"k":"a","ts":10,"v":"v0","op":"-D"}
`), 0o644)
		n := start(t, parse(t, dir, `name: changelog
join:
  type: temporal
  mode: left
  temporal: {semantics: flink}
  left:  {name: l, key: k, ts: ts, kind: op}
  right: {name: r, key: k, ts: ts, kind: op}
  project: [{name: lv, from: l.v}, {name: rv, from: r.v}]
sources:
  - {name: ls, type: file, path: left.jsonl, side: left}
  - {name: rs, type: file, path: right.jsonl, side: right}
sinks: [{type: file, path: out.jsonl}]
`))
		run(t, n)
		var got []string
		// The key's outputs in its order (Seq): the two sources' replies
		// reach the sink in either order.
		lines := readOut(t, filepath.Join(dir, "out.jsonl"))
		sort.SliceStable(lines, func(i, j int) bool { return lines[i].Seq < lines[j].Seq })
		for _, l := range lines {
			if l.Seq == 0 {
				t.Errorf("output %+v without seq", l)
			}
			got = append(got, fmt.Sprintf("%s %d %v|%v", l.Op, l.Ts, l.Row["lv"], l.Row["rv"]))
		}
		want := []string{"+I 5 p5|v0", "-U 5 p5|v0", "+U 5 p5b|v0", "-D 6 p6|v0", "+I 12 p12|<nil>"}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("outputs\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("temporal-latest", func(t *testing.T) {
		lines, late := temporal(t, "type: temporal-latest\n  mode: left")
		if late != 0 {
			t.Errorf("%d inputs late, want none (processing time)", late)
		}
		check(t, lines, false)
		t.Logf("%d outputs", len(lines))
	})
}

// TestNodeKafkaNullKeyProbe: a left temporal-latest join with temporal:
// {semantics: kafka} emits a probe whose key is null (missing, or a
// key_expr that yields null) padded, as Kafka Streams' left KStream-KTable
// join does since KIP-962; a table record with a null key is still refused,
// and so is every null-key probe of the default semantics.
func TestNodeKafkaNullKeyProbe(t *testing.T) {
	for _, sem := range []string{"kafka", "strict"} {
		t.Run(sem, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "right.jsonl"), []byte(`{"k":"a","ts":0,"v":"y0"}
{"ts":0,"v":"ynull"}
`), 0o644)
			os.WriteFile(filepath.Join(dir, "left.jsonl"), []byte(`{"k":"a","ts":1,"v":"pa"}
{"ts":2,"v":"pnull"}
{"k":null,"ts":3,"v":"pnull2"}
{"k":"b","ts":4,"v":"pb"}
`), 0o644)
			n := start(t, parse(t, dir, `name: kip962
join:
  type: temporal-latest
  mode: left
  temporal: {semantics: `+sem+`}
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}
  project: [{name: lv, from: l.v}, {name: rv, from: r.v}]
sources:
  - {name: rs, type: file, path: right.jsonl, side: right, on_bad_input: skip}
  - {name: ls, type: file, path: left.jsonl, side: left, on_bad_input: skip}
sinks: [{type: table}]
`))
			run(t, n)
			got := node.PairsOf(n.Table())
			want := map[string]bool{"pb|<nil>": true}
			if sem == "kafka" {
				want["pnull|<nil>"], want["pnull2|<nil>"] = true, true
			}
			// pa joins y0 unless the left file is read first.
			delete(got, "pa|y0")
			delete(got, "pa|<nil>")
			if missing, extra := node.DiffSets(got, want); len(missing)+len(extra) > 0 {
				t.Errorf("%s: missing %v, extra %v", sem, missing, extra)
			}
		})
	}
}
