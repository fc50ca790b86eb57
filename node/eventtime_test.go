package node_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/node"
)

// TestNodeWindowJoin runs a 10-second tumbling window join of two event
// streams through the key actors (watermarks from event times, timers,
// end-of-input flush) and compares the joined pairs with a brute-force join.
// The second variant keeps state in Redis with keys passivating, so timers
// wake keys through the store's timer index.
func TestNodeWindowJoin(t *testing.T) {
	for _, variant := range []string{"embedded", "redis-passivating"} {
		t.Run(variant, func(t *testing.T) {
			dir := t.TempDir()
			r := rand.New(rand.NewPCG(3, 4))
			type ev struct {
				K  string `json:"k"`
				Ts int64  `json:"ts"`
				V  string `json:"v"`
			}
			var left, right []ev
			for i := range 600 {
				ts := int64(i) * 250 // in event-time order: 150 s of events
				e := ev{K: fmt.Sprint("k", r.IntN(12)), Ts: ts + int64(r.IntN(200)), V: fmt.Sprint("e", i)}
				if r.IntN(2) == 0 {
					left = append(left, e)
				} else {
					right = append(right, e)
				}
			}
			for name, evs := range map[string][]ev{"left.jsonl": left, "right.jsonl": right} {
				f, _ := os.Create(filepath.Join(dir, name))
				for _, e := range evs {
					b, _ := json.Marshal(e)
					f.Write(append(b, '\n'))
				}
				f.Close()
			}
			want := map[string]bool{}
			for _, l := range left {
				for _, rr := range right {
					if l.K == rr.K && l.Ts/10000 == rr.Ts/10000 {
						want[l.V+"|"+rr.V] = true
					}
				}
			}
			state, rate := "", ""
			if variant != "embedded" {
				rs := testutil.StartRedis(t)
				state = fmt.Sprintf("state: {store: redis, redis: {addr: %q}, passivate_after: 20ms}\n", rs.Addr)
				rate = ", rate: 400" // slow enough that keys go idle and passivate between their events
			}
			n := start(t, parse(t, dir, `name: windows
join:
  type: window
  mode: inner
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}
  window: {type: tumbling, size: 10s}
  project: [{name: lv, from: l.v}, {name: rv, from: r.v}]
sources:
  - {name: ls, type: file, path: left.jsonl, side: left, watermark: {max_out_of_orderness: 1s}`+rate+`}
  - {name: rs, type: file, path: right.jsonl, side: right, watermark: {max_out_of_orderness: 1s}`+rate+`}
sinks: [{type: table}]
`+state))
			run(t, n)
			got := node.PairsOf(n.Table())
			missing, extra := node.DiffSets(got, want)
			if len(missing)+len(extra) > 0 || len(want) == 0 {
				t.Errorf("window join: %d pairs, want %d (%d missing, %d extra); late %d", len(got), len(want), len(missing), len(extra), n.Stats().Late.Load())
			}
			if variant != "embedded" && n.Stats().Passivations.Load() == 0 {
				t.Errorf("no key passivated: the timer index was not exercised")
			}
			t.Logf("%d pairs; late %d; activations %d, passivations %d", len(got), n.Stats().Late.Load(), n.Stats().Activations.Load(), n.Stats().Passivations.Load())
		})
	}
}

// TestNodeTimedJoins runs the interval, time-bounded (left outer) and
// temporal (left, as-of) joins through the key actors from two files and
// compares the outputs with brute-force answers. Event times are shuffled
// within the sources' out-of-orderness bound, so nothing is late and the
// answer does not depend on how the two files interleave.
func TestNodeTimedJoins(t *testing.T) {
	type ev struct {
		K  string `json:"k"`
		Ts int64  `json:"ts"`
		V  string `json:"v"`
	}
	r := rand.New(rand.NewPCG(7, 8))
	var left, right []ev
	for i := range 500 {
		e := ev{K: fmt.Sprint("k", r.IntN(8)), Ts: int64(i)*200 + int64(r.IntN(300)), V: fmt.Sprint("e", i)}
		if r.IntN(2) == 0 {
			left = append(left, e)
		} else {
			right = append(right, e)
		}
	}
	pair := func(l, r *ev) string {
		if r == nil {
			return l.V + "|<nil>"
		}
		return l.V + "|" + r.V
	}
	// fullOuter is Flink's outer window join through coGroup (and Spark's
	// windowed join, emit on-arrival): the same final set of rows.
	fullOuter := func() map[string]bool {
		// Flink's outer window join through coGroup: per key and window,
		// every pair, or each row with nulls when the other side is empty.
		w := map[string]bool{}
		type kw struct {
			k string
			w int64
		}
		ls, rs := map[kw][]*ev{}, map[kw][]*ev{}
		for i := range left {
			ls[kw{left[i].K, left[i].Ts / 5000}] = append(ls[kw{left[i].K, left[i].Ts / 5000}], &left[i])
		}
		for i := range right {
			rs[kw{right[i].K, right[i].Ts / 5000}] = append(rs[kw{right[i].K, right[i].Ts / 5000}], &right[i])
		}
		for k, l := range ls {
			for _, le := range l {
				if len(rs[k]) == 0 {
					w[le.V+"|<nil>"] = true
				}
				for _, re := range rs[k] {
					w[pair(le, re)] = true
				}
			}
		}
		for k, r := range rs {
			if len(ls[k]) == 0 {
				for _, re := range r {
					w["<nil>|"+re.V] = true
				}
			}
		}
		return w
	}
	for _, c := range []struct {
		name, join string
		project    string // default: lv and rv
		want       func() map[string]bool
	}{{
		// A left semi join: each left row with a match, once, alone.
		name: "time-bounded semi", join: "type: time-bounded\n  mode: semi\n  lower: -1s\n  upper: 1500ms",
		project: "[{name: lv, from: l.v}]",
		want: func() map[string]bool {
			w := map[string]bool{}
			for i := range left {
				for j := range right {
					if l, rr := &left[i], &right[j]; l.K == rr.K && rr.Ts >= l.Ts-1000 && rr.Ts <= l.Ts+1500 {
						w[pair(l, nil)] = true
					}
				}
			}
			return w
		},
	}, {
		name: "interval", join: "type: interval\n  lower: -2s\n  upper: 1s",
		want: func() map[string]bool {
			w := map[string]bool{}
			for i := range left {
				for j := range right {
					l, rr := &left[i], &right[j]
					if l.K == rr.K && rr.Ts >= l.Ts-2000 && rr.Ts <= l.Ts+1000 {
						w[pair(l, rr)] = true
					}
				}
			}
			return w
		},
	}, {
		name: "time-bounded left", join: "type: time-bounded\n  mode: left\n  lower: 0s\n  upper: 1500ms",
		want: func() map[string]bool {
			w := map[string]bool{}
			for i := range left {
				l, matched := &left[i], false
				for j := range right {
					if rr := &right[j]; l.K == rr.K && rr.Ts >= l.Ts && rr.Ts <= l.Ts+1500 {
						w[pair(l, rr)], matched = true, true
					}
				}
				if !matched {
					w[pair(l, nil)] = true
				}
			}
			return w
		},
	}, {
		name: "window full outer", join: "type: window\n  mode: full\n  window: {type: tumbling, size: 5s}",
		want: fullOuter,
	}, {
		// Spark's windowed join: pairs at once, padded rows at the close.
		name: "window full outer on-arrival", join: "type: window\n  mode: full\n  window: {type: tumbling, size: 5s}\n  emit: on-arrival",
		want: fullOuter,
	}, {
		name: "temporal left", join: "type: temporal\n  mode: left",
		want: func() map[string]bool {
			w := map[string]bool{}
			for i := range left {
				l := &left[i]
				var best *ev
				for j := range right {
					if rr := &right[j]; l.K == rr.K && rr.Ts <= l.Ts && (best == nil || rr.Ts > best.Ts) {
						best = rr
					}
				}
				w[pair(l, best)] = true
			}
			return w
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			project := c.project
			if project == "" {
				project = "[{name: lv, from: l.v}, {name: rv, from: r.v}]"
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
			n := start(t, parse(t, dir, `name: timed
join:
  `+c.join+`
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}
  project: `+project+`
sources:
  - {name: ls, type: file, path: left.jsonl, side: left, watermark: {max_out_of_orderness: 1s}}
  - {name: rs, type: file, path: right.jsonl, side: right, watermark: {max_out_of_orderness: 1s}}
sinks: [{type: table}]
`))
			run(t, n)
			got := node.PairsOf(n.Table())
			want := c.want()
			if c.project != "" && len(n.Table()) != len(want) {
				t.Errorf("%s: %d rows, want %d (each once)", c.name, len(n.Table()), len(want))
			}
			missing, extra := node.DiffSets(got, want)
			if len(missing)+len(extra) > 0 || len(want) == 0 {
				t.Errorf("%s: %d outputs, want %d; missing %v; extra %v; late %d", c.name, len(got), len(want), head(missing), head(extra), n.Stats().Late.Load())
			}
			t.Logf("%d outputs; late %d", len(got), n.Stats().Late.Load())
		})
	}
}

func head(s []string) []string {
	if len(s) > 5 {
		return s[:5]
	}
	return s
}

// TestNodeKeyExpr re-keys an input with key_expr: left events carry the user
// in upper case, right ones in lower case; lower(user) joins them.
func TestNodeKeyExpr(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "left.jsonl"), []byte(`{"user":"ALICE","ts":1000,"v":"l1"}
{"user":"Bob","ts":2000,"v":"l2"}
{"user":"CAROL","ts":3000,"v":"l3"}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "right.jsonl"), []byte(`{"u":"alice","ts":1500,"v":"r1"}
{"u":"bob","ts":2500,"v":"r2"}
{"u":"dave","ts":3000,"v":"r3"}
`), 0o644)
	n := start(t, parse(t, dir, `name: rekey
join:
  type: interval
  lower: -1s
  upper: 1s
  left:  {name: l, key_expr: 'lower(user)', ts: ts}
  right: {name: r, key: u, ts: ts}
  project: [{name: lv, from: l.v}, {name: rv, from: r.v}]
sources:
  - {name: ls, type: file, path: left.jsonl, side: left}
  - {name: rs, type: file, path: right.jsonl, side: right}
sinks: [{type: table}]
`))
	run(t, n)
	got := map[string]bool{}
	for _, row := range n.Table() {
		got[fmt.Sprintf("%v|%v", row.Row["lv"], row.Row["rv"])] = true
	}
	if len(got) != 2 || !got["l1|r1"] || !got["l2|r2"] {
		t.Errorf("pairs %v, want l1|r1 and l2|r2", got)
	}
	if _, err := job.Parse([]byte("name: x\njoin: {type: interval, lower: 0s, upper: 1s, left: {name: l, key: a, key_expr: 'b', ts: ts}, right: {name: r, key: u, ts: ts}}\nsources: [{name: s, type: file, path: x, side: left}]\n")); err == nil || !strings.Contains(err.Error(), "key_expr") {
		t.Errorf("key and key_expr together: %v", err)
	}
}
