package node_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/joinery/joinery/node"
)

// TestNodeJoinCondition runs event-time joins (time-bounded, interval,
// window, unbounded) with a residual condition
// (join.condition, left_condition, right_condition) through the key actors
// from two files and compares the outputs with a brute-force join: a pair
// is emitted iff the keys match, the times are in range (or window) and
// the whole condition holds; an outer side's row that matched nothing —
// including every row failing its own side's condition, which the machine
// pads at once without buffering it — is emitted padded.
func TestNodeJoinCondition(t *testing.T) {
	type ev struct {
		K  string `json:"k"`
		Ts int64  `json:"ts"`
		V  string `json:"v"`
		N  int    `json:"n"`
	}
	r := rand.New(rand.NewPCG(11, 12))
	var left, right []ev
	for i := range 400 {
		e := ev{K: fmt.Sprint("k", r.IntN(6)), Ts: int64(i)*200 + int64(r.IntN(300)), V: fmt.Sprint("e", i), N: r.IntN(20)}
		if r.IntN(2) == 0 {
			left = append(left, e)
		} else {
			right = append(right, e)
		}
	}
	cond := func(l, r *ev) bool { return l.N%3 != 0 && r.N%5 != 1 && r.N > l.N }
	conds := "  condition: 'r.n > l.n'\n  left_condition: 'l.n % 3 != 0'\n  right_condition: 'r.n % 5 != 1'\n"
	for _, c := range []struct {
		name, join string
		in         func(l, r *ev) bool // the key and time part of the match
		padLeft    bool
		padRight   bool
	}{
		{"time-bounded left", "type: time-bounded\n  mode: left\n  lower: 0s\n  upper: 1500ms\n",
			func(l, r *ev) bool { return l.K == r.K && r.Ts >= l.Ts && r.Ts <= l.Ts+1500 }, true, false},
		{"interval", "type: interval\n  lower: -1s\n  upper: 1s\n",
			func(l, r *ev) bool { return l.K == r.K && r.Ts >= l.Ts-1000 && r.Ts <= l.Ts+1000 }, false, false},
		{"window full outer", "type: window\n  mode: full\n  window: {type: tumbling, size: 5s}\n",
			func(l, r *ev) bool { return l.K == r.K && l.Ts/5000 == r.Ts/5000 }, true, true},
		// A TTL far longer than the 80 s of events: every row is kept to the end.
		{"unbounded right", "type: unbounded\n  mode: right\n  ttl: 1h\n",
			func(l, r *ev) bool { return l.K == r.K }, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := map[string]bool{}
			rm := make([]bool, len(right))
			for i := range left {
				matched := false
				for j := range right {
					if l, rr := &left[i], &right[j]; c.in(l, rr) && cond(l, rr) {
						want[l.V+"|"+rr.V], matched, rm[j] = true, true, true
					}
				}
				if !matched && c.padLeft {
					want[left[i].V+"|<nil>"] = true
				}
			}
			for j := range right {
				if !rm[j] && c.padRight {
					want["<nil>|"+right[j].V] = true
				}
			}
			dir := t.TempDir()
			for name, evs := range map[string][]ev{"left.jsonl": left, "right.jsonl": right} {
				f, _ := os.Create(filepath.Join(dir, name))
				for _, e := range evs {
					b, _ := json.Marshal(e)
					f.Write(append(b, '\n'))
				}
				f.Close()
			}
			n := start(t, parse(t, dir, `name: cond
join:
  `+c.join+conds+`  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}
  project: [{name: lv, from: l.v}, {name: rv, from: r.v}]
sources:
  - {name: ls, type: file, path: left.jsonl, side: left, watermark: {max_out_of_orderness: 1s}}
  - {name: rs, type: file, path: right.jsonl, side: right, watermark: {max_out_of_orderness: 1s}}
sinks: [{type: table}]
`))
			run(t, n)
			got := node.PairsOf(n.Table())
			missing, extra := node.DiffSets(got, want)
			if len(missing)+len(extra) > 0 || len(want) == 0 {
				t.Errorf("%s: %d outputs, want %d; missing %v; extra %v; late %d", c.name, len(got), len(want), head(missing), head(extra), n.Stats().Late.Load())
			}
			t.Logf("%d outputs; late %d", len(got), n.Stats().Late.Load())
		})
	}
}
