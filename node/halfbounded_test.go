package node_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/joinery/joinery/replay"
)

// TestNodeHalfBoundedReplay runs half-bounded time-bounded joins (open:
// lower or upper, with a TTL or ttl: none; inner, outer and left semi)
// through a node's key actors — two file sources read concurrently,
// watermarks from event times, timers, the end-of-input flush — and through
// replay with the same job file, and checks that the node writes the same
// outputs, each with the same time. The input is never behind the
// watermark (disorder 300 ms, out-of-orderness 1 s), so what the node joins
// does not depend on how far one source got ahead of the other.
func TestNodeHalfBoundedReplay(t *testing.T) {
	type ev struct {
		K  string `json:"k"`
		Ts int64  `json:"ts"`
		V  string `json:"v"`
	}
	r := rand.New(rand.NewPCG(27, 5))
	var left, right [][]byte
	var events bytes.Buffer // replay's input: both sides in time order
	for i := range 400 {
		e := ev{K: fmt.Sprint("k", r.IntN(6)), Ts: int64(i)*200 + int64(r.IntN(300)), V: fmt.Sprint("e", i)}
		b, _ := json.Marshal(e)
		side := "left"
		if r.IntN(2) == 0 {
			left = append(left, b)
		} else {
			right, side = append(right, b), "right"
		}
		fmt.Fprintf(&events, `{"side":%q,"key":%q,"ts":%d,"value":%s}`+"\n", side, e.K, e.Ts, b)
	}
	for _, c := range []struct{ name, join, project string }{
		{"open upper inner ttl", "mode: inner\n  lower: 500ms\n  open: upper\n  ttl: 3s", "[{name: lv, from: l.v}, {name: rv, from: r.v}]"},
		{"open lower left ttl", "mode: left\n  upper: -200ms\n  open: lower\n  ttl: 2s", "[{name: lv, from: l.v}, {name: rv, from: r.v}]"},
		{"open upper full ttl none", "mode: full\n  lower: 1s\n  open: upper\n  ttl: none", "[{name: lv, from: l.v}, {name: rv, from: r.v}]"},
		{"open lower semi ttl", "mode: semi\n  upper: 0s\n  open: lower\n  ttl: 1500ms", "[{name: lv, from: l.v}]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeLines(t, filepath.Join(dir, "left.jsonl"), left)
			writeLines(t, filepath.Join(dir, "right.jsonl"), right)
			yml := `name: half
join:
  type: time-bounded
  ` + c.join + `
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}
  project: ` + c.project + `
sources:
  - {name: ls, type: file, path: left.jsonl, side: left, watermark: {max_out_of_orderness: 1s}}
  - {name: rs, type: file, path: right.jsonl, side: right, watermark: {max_out_of_orderness: 1s}}
sinks: [{type: file, path: out.jsonl}]
`
			n := start(t, parse(t, dir, yml))
			run(t, n)
			if late := n.Stats().Late.Load(); late != 0 {
				t.Fatalf("%d inputs late: the test's input must never be", late)
			}
			var got []string
			for _, l := range readOut(t, filepath.Join(dir, "out.jsonl")) {
				if l.Op != "+I" {
					t.Errorf("output %+v: an event-time join inserts only", l)
				}
				got = append(got, fmt.Sprintf("%v|%v@%d", l.Row["lv"], l.Row["rv"], l.Ts))
			}

			jb, err := replay.ParseJob([]byte(yml))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if _, err := replay.RunEvents(jb, bytes.NewReader(events.Bytes()), &out, replay.Options{}); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var o struct {
					Left, Right *ev
					Ts          int64
				}
				if err := json.Unmarshal([]byte(line), &o); err != nil {
					t.Fatalf("replay output %q: %v", line, err)
				}
				lv, rv := any(nil), any(nil)
				if o.Left != nil {
					lv = o.Left.V
				}
				if o.Right != nil {
					rv = o.Right.V
				}
				want = append(want, fmt.Sprintf("%v|%v@%d", lv, rv, o.Ts))
			}
			slices.Sort(got)
			slices.Sort(want)
			if len(want) < 20 {
				t.Fatalf("replay wrote %d outputs: the input tests too little", len(want))
			}
			if !slices.Equal(got, want) {
				missing, extra := diffLists(got, want)
				t.Errorf("node wrote %d outputs, replay %d; missing %v; extra %v", len(got), len(want), head(missing), head(extra))
			}
			t.Logf("%d outputs, the same as replay's", len(got))
		})
	}
}

// diffLists returns what want has and got lacks, and the reverse (sorted
// lists, duplicates counted).
func diffLists(got, want []string) (missing, extra []string) {
	count := map[string]int{}
	for _, w := range want {
		count[w]++
	}
	for _, g := range got {
		count[g]--
	}
	for k, c := range count {
		for ; c > 0; c-- {
			missing = append(missing, k)
		}
		for ; c < 0; c++ {
			extra = append(extra, k)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return missing, extra
}
