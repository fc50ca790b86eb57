package replay_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/joinery/joinery/replay"
)

// TestReplayForeignKeyVersioned is Kafka Streams'
// KTableKTableForeignKeyVersionedJoinIntegrationTest.
// shouldIgnoreOutOfOrderRecordsIffVersioned in its eight variants (left or
// inner join, the left table versioned or not, the right one versioned or
// not) on examples/replay/ref-kstreams-fk-join-versioned's input. After
// each of the test's steps it compares the records the step emitted, folded
// per key as the test's readKeyValuesToMap folds them (a retraction is
// null), and the table materialized from every record so far (the test's
// store), with the test's.
func TestReplayForeignKeyVersioned(t *testing.T) {
	dir := filepath.Join("..", "examples", "replay", "ref-kstreams-fk-join-versioned")
	in, err := os.ReadFile(filepath.Join(dir, "input.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(in), "\n"), "\n")
	steps := []int{1, 3, 4, 6, 7, 9, 10, 11, 12} // the input lines each step ends after
	const (
		l1, l2     = "(lhsValue1|rhs1,rhsValue1)", "(lhsValue2|rhs1,rhsValue1)"
		o1, o2     = "(lhsValue1_ooo|rhs1,rhsValue1)", "(lhsValue2_ooo|rhs1,rhsValue1)"
		n1, n2     = "(lhsValue1_new|rhs1,rhsValue1)", "(lhsValue2_new|rhs1,rhsValue1)"
		r1, r2     = "(lhsValue1_new|rhs1,rhsValue1_ooo)", "(lhsValue2_new|rhs1,rhsValue1_ooo)"
		p1, p2     = "(lhsValue1_new|rhs1,null)", "(lhsValue2_new|rhs1,null)"
		w1, w2     = "(lhsValue1_new|rhs1,rhsValue1_new)", "(lhsValue2_new|rhs1,rhsValue1_new)"
		null       = "null"
		lhs1, lhs2 = "lhs1", "lhs2"
	)
	m := func(kv ...string) map[string]string {
		out := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, leftJoin := range []bool{true, false} {
		for _, lv := range []bool{true, false} {
			for _, rv := range []bool{true, false} {
				t.Run(fmt.Sprintf("leftJoin=%v,leftVersioned=%v,rightVersioned=%v", leftJoin, lv, rv), func(t *testing.T) {
					// The test's expectations, step by step: records emitted, then the store.
					type want struct{ emitted, store map[string]string }
					ws := []want{
						{m(), m()},
						{m(lhs1, l1, lhs2, l2), m(lhs1, l1, lhs2, l2)},
						{m(lhs2, null), m(lhs1, l1)},
					}
					if lv {
						ws = append(ws, want{m(), m(lhs1, l1)}, want{m(), m(lhs1, l1)})
					} else {
						ws = append(ws, want{m(lhs1, o1, lhs2, o2), m(lhs1, o1, lhs2, o2)}, want{m(lhs1, null), m(lhs2, o2)})
					}
					ws = append(ws, want{m(lhs1, n1, lhs2, n2), m(lhs1, n1, lhs2, n2)})
					switch {
					case rv:
						ws = append(ws, want{m(), m(lhs1, n1, lhs2, n2)}, want{m(), m(lhs1, n1, lhs2, n2)})
					case leftJoin:
						ws = append(ws, want{m(lhs1, r1, lhs2, r2), m(lhs1, r1, lhs2, r2)}, want{m(lhs1, p1, lhs2, p2), m(lhs1, p1, lhs2, p2)})
					default:
						ws = append(ws, want{m(lhs1, r1, lhs2, r2), m(lhs1, r1, lhs2, r2)}, want{m(lhs1, null, lhs2, null), m()})
					}
					ws = append(ws, want{m(lhs1, w1, lhs2, w2), m(lhs1, w1, lhs2, w2)})
					if len(ws) != len(steps) {
						t.Fatalf("%d expectations, %d steps", len(ws), len(steps))
					}

					mode := "inner"
					if leftJoin {
						mode = "left"
					}
					jb, err := replay.ParseJob([]byte(fmt.Sprintf(`name: fk-versioned
join:
  type: cdc
  mode: %s
  cdc: {kinds: kafka, foreign_key: true}
  left: {name: left_table, pk: key, join_on: fk, versioned: %v}
  right: {name: right_table, pk: key, join_on: key, versioned: %v}
`, mode, lv, rv)))
					if err != nil {
						t.Fatal(err)
					}
					store := map[string]string{}
					seen := 0
					for i, end := range steps {
						var out bytes.Buffer
						if _, err := replay.RunEvents(jb, strings.NewReader(strings.Join(lines[:end], "")), &out, replay.Options{}); err != nil {
							t.Fatal(err)
						}
						outs := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
						if out.Len() == 0 {
							outs = nil
						}
						if len(outs) < seen {
							t.Fatalf("step %d: %d outputs, %d before", i+1, len(outs), seen)
						}
						emitted := map[string]string{}
						for _, o := range outs[seen:] {
							key, value, retract := fkRecord(t, o)
							if retract {
								emitted[key] = null
								delete(store, key)
							} else {
								emitted[key] = value
								store[key] = value
							}
						}
						seen = len(outs)
						if !maps.Equal(emitted, ws[i].emitted) {
							t.Errorf("step %d (to input line %d): emitted %s, the Kafka test expects %s", i+1, end, mapText(emitted), mapText(ws[i].emitted))
						}
						if !maps.Equal(store, ws[i].store) {
							t.Errorf("step %d (to input line %d): table %s, the Kafka test's store %s", i+1, end, mapText(store), mapText(ws[i].store))
						}
					}
				})
			}
		}
	}
}

// fkRecord reads a foreign-key join's output line as the test's record: the
// left row's key, and "(left value,right value)" or a retraction.
func fkRecord(t *testing.T, line string) (key, value string, retract bool) {
	t.Helper()
	var o struct {
		Left  map[string]any `json:"left"`
		Right map[string]any `json:"right"`
		Op    string         `json:"op"`
	}
	if err := json.Unmarshal([]byte(line), &o); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	key, _ = o.Left["key"].(string)
	right := "null"
	if o.Right != nil {
		right = fmt.Sprint(o.Right["value"])
	}
	return key, fmt.Sprintf("(%v,%s)", o.Left["value"], right), o.Op == "-U" || o.Op == "-D"
}

func mapText(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%s", k, m[k])
	}
	b.WriteByte('}')
	return b.String()
}
