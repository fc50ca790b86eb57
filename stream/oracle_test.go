package stream_test

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/stream"
)

// el is an element of the randomized tests: its side, number, key and time.
type el struct {
	Side byte // 'L' or 'R'
	ID   int
	Key  string
	Ts   int64
}

func (e el) String() string { return fmt.Sprintf("%c%d@%d", e.Side, e.ID, e.Ts) }

func elKey(e el) string { return e.Key }

// res is one join result: the pair and its time.
type res struct {
	L, R string
	Ts   int64
}

// step is one source item of a random script: an element or a watermark.
type step struct {
	e    el
	mark bool
	wm   int64
}

// script is a random input: each side's items in source order, and the
// arrivals at a two-input operator in the order Execute delivers them (one
// item from each source in turn), each element with the combined watermark
// at its arrival.
type script struct {
	left, right []step
	arrivals    []arrival
}

type arrival struct {
	e  el
	wm int64
}

func randScript(rng *rand.Rand) script {
	nKeys := 1 + rng.Intn(3)
	disorder := int64(rng.Intn(6))
	gen := func(side byte, n int) []step {
		var steps []step
		maxTs := int64(0)
		stride := int64(1 + rng.Intn(3))
		for i := range n {
			ts := max(0, int64(i)*stride+rng.Int63n(2*disorder+1)-disorder)
			steps = append(steps, step{e: el{Side: side, ID: i, Key: fmt.Sprint("k", rng.Intn(nKeys)), Ts: ts}})
			maxTs = max(maxTs, ts)
			if rng.Intn(3) == 0 {
				steps = append(steps, step{mark: true, wm: maxTs - int64(rng.Intn(4))})
			}
		}
		return steps
	}
	s := script{left: gen('L', rng.Intn(16)), right: gen('R', rng.Intn(16))}
	srcs := [2][]step{s.left, s.right}
	wms := [2]int64{math.MinInt64, math.MinInt64}
	combined := int64(math.MinInt64)
	var idx [2]int
	var done [2]bool
	for !done[0] || !done[1] {
		for i := range 2 {
			if done[i] {
				continue
			}
			if idx[i] == len(srcs[i]) {
				done[i] = true
				wms[i] = math.MaxInt64
			} else {
				st := srcs[i][idx[i]]
				idx[i]++
				if st.mark {
					wms[i] = max(wms[i], st.wm)
				} else {
					s.arrivals = append(s.arrivals, arrival{e: st.e, wm: combined})
				}
			}
			combined = max(combined, min(wms[0], wms[1]))
		}
	}
	return s
}

func items(steps []step) []stream.Item[el] {
	out := make([]stream.Item[el], len(steps))
	for i, st := range steps {
		if st.mark {
			out[i] = stream.Watermark[el](st.wm)
		} else {
			out[i] = stream.At(st.e.Ts, st.e)
		}
	}
	return out
}

func (s script) sources(env *stream.Env) (l, r *stream.Stream[el]) {
	return stream.FromItems(env, items(s.left)...), stream.FromItems(env, items(s.right)...)
}

func sortRes(rs []res) []res {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b res) int { return cmpStr(fmt.Sprint(a), fmt.Sprint(b)) })
	return rs
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func lateIDs(ls []stream.Late[el, el]) []string {
	var ids []string
	for _, l := range ls {
		if l.Left != nil {
			ids = append(ids, l.Left.String())
		} else {
			ids = append(ids, l.Right.String())
		}
	}
	slices.Sort(ids)
	return ids
}

// windowsOf is a brute-force assigner: every window [s, s+size) with s =
// offset + n*slide that holds ts.
func windowsOf(ts, size, slide, offset int64) []joins.Window {
	var ws []joins.Window
	for s := ts - size - 2*slide; s <= ts; s++ {
		if ((s-offset)%slide+slide)%slide == 0 && s <= ts && ts < s+size {
			ws = append(ws, joins.Window{Start: s, End: s + size})
		}
	}
	return ws
}

// TestStreamWindowJoinOracle compares the API's tumbling and sliding window
// joins with a nested-loop oracle over random keys, times, disorder and
// watermarks. An element is added to a window when the watermark at its
// arrival has not reached the window's MaxTimestamp + lateness; it is late
// when it is added to none. With no lateness every pair of a window is
// emitted once, stamped MaxTimestamp; with lateness, late firings repeat
// pairs, so the distinct results are compared.
func TestStreamWindowJoinOracle(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	for iter := range 400 {
		s := randScript(rng)
		size := int64(1 + rng.Intn(5))
		slide := size
		if rng.Intn(2) == 0 {
			slide = int64(1 + rng.Intn(int(size)))
		}
		offset := int64(0)
		if rng.Intn(3) == 0 {
			offset = rng.Int63n(slide)
		}
		lateness := int64(0)
		if rng.Intn(3) == 0 {
			lateness = int64(rng.Intn(4))
		}

		env := stream.NewEnv()
		l, r := s.sources(env)
		var a stream.WindowAssigner
		if slide == size {
			a = stream.TumblingEventTime(time.Duration(size) * time.Millisecond)
		} else {
			a = stream.SlidingEventTime(time.Duration(size)*time.Millisecond, time.Duration(slide)*time.Millisecond)
		}
		a = a.WithOffset(time.Duration(offset) * time.Millisecond)
		j := stream.Join[string, res](l, r).Where(elKey).EqualTo(elKey).Window(a).
			AllowedLateness(time.Duration(lateness) * time.Millisecond)
		got := stream.Collect(j.Apply(func(l, r el) res { return res{L: l.String(), R: r.String()} }))
		late := stream.Collect(j.Late())
		if err := env.Execute(); err != nil {
			t.Fatalf("seed %d iter %d: %v", seed, iter, err)
		}

		// The oracle.
		type member struct {
			e  el
			wm int64
		}
		in := func(m member, w joins.Window) bool { return w.End-1+lateness > m.wm }
		var ls, rs []member
		var wantLate []string
		for _, ar := range s.arrivals {
			m := member{ar.e, ar.wm}
			added := false
			for _, w := range windowsOf(ar.e.Ts, size, slide, offset) {
				added = added || in(m, w)
			}
			if !added {
				wantLate = append(wantLate, ar.e.String())
				continue
			}
			if ar.e.Side == 'L' {
				ls = append(ls, m)
			} else {
				rs = append(rs, m)
			}
		}
		var want []res
		for _, x := range ls {
			for _, y := range rs {
				if x.e.Key != y.e.Key {
					continue
				}
				for _, w := range windowsOf(x.e.Ts, size, slide, offset) {
					if w.Start <= y.e.Ts && y.e.Ts < w.End && in(x, w) && in(y, w) {
						want = append(want, res{L: x.e.String(), R: y.e.String(), Ts: w.End - 1})
					}
				}
			}
		}
		var gotRes []res
		for _, g := range got.Timestamped() {
			g.Value.Ts = g.Ts
			gotRes = append(gotRes, g.Value)
		}
		gs, ws := sortRes(gotRes), sortRes(want)
		if lateness > 0 {
			gs = slices.Compact(gs)
		}
		desc := fmt.Sprintf("seed %d iter %d size %d slide %d offset %d lateness %d\nleft %v\nright %v",
			seed, iter, size, slide, offset, lateness, s.left, s.right)
		if !slices.Equal(gs, ws) {
			t.Fatalf("%s\ngot  %v\nwant %v", desc, gs, ws)
		}
		slices.Sort(wantLate)
		if gl := lateIDs(late.Values()); !slices.Equal(gl, wantLate) {
			t.Fatalf("%s\nlate got %v want %v", desc, gl, wantLate)
		}
		if env.LateCount() != len(wantLate) {
			t.Fatalf("%s\nLateCount %d want %d", desc, env.LateCount(), len(wantLate))
		}
	}
}

// TestStreamIntervalJoinOracle compares the API's interval join with a
// nested-loop oracle: an element behind the watermark at its arrival is
// late; every pair of on-time elements of one key with
// l.ts + lower <= r.ts <= l.ts + upper (each bound optionally exclusive)
// is emitted exactly once, stamped max(l.ts, r.ts).
func TestStreamIntervalJoinOracle(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	for iter := range 400 {
		s := randScript(rng)
		lower := int64(rng.Intn(9) - 5)
		upper := lower + int64(rng.Intn(6))
		lowerEx, upperEx := rng.Intn(3) == 0, rng.Intn(3) == 0
		if upper-lower < 2 {
			lowerEx, upperEx = false, false // (0,1) exclusive leaves no time: refused, tested apart
		}

		env := stream.NewEnv()
		l, r := s.sources(env)
		b := stream.IntervalJoin[res](stream.KeyBy(l, elKey), stream.KeyBy(r, elKey)).
			Between(time.Duration(lower)*time.Millisecond, time.Duration(upper)*time.Millisecond)
		if lowerEx {
			b.LowerBoundExclusive()
		}
		if upperEx {
			b.UpperBoundExclusive()
		}
		got := stream.Collect(b.Process(func(l, r el, c stream.PairContext, emit func(res)) {
			emit(res{L: l.String(), R: r.String(), Ts: c.Ts})
		}))
		late := stream.Collect(b.Late())
		if err := env.Execute(); err != nil {
			t.Fatalf("seed %d iter %d: %v", seed, iter, err)
		}

		lo, hi := lower, upper
		if lowerEx {
			lo++
		}
		if upperEx {
			hi--
		}
		var ls, rs []el
		var wantLate []string
		for _, ar := range s.arrivals {
			switch {
			case ar.e.Ts < ar.wm:
				wantLate = append(wantLate, ar.e.String())
			case ar.e.Side == 'L':
				ls = append(ls, ar.e)
			default:
				rs = append(rs, ar.e)
			}
		}
		var want []res
		for _, x := range ls {
			for _, y := range rs {
				if x.Key == y.Key && x.Ts+lo <= y.Ts && y.Ts <= x.Ts+hi {
					want = append(want, res{L: x.String(), R: y.String(), Ts: max(x.Ts, y.Ts)})
				}
			}
		}
		var gotRes []res
		for _, g := range got.Timestamped() {
			if g.Ts != g.Value.Ts {
				t.Fatalf("seed %d iter %d: result %v stamped %d", seed, iter, g.Value, g.Ts)
			}
			gotRes = append(gotRes, g.Value)
		}
		desc := fmt.Sprintf("seed %d iter %d bounds [%d,%d] ex %v %v\nleft %v\nright %v",
			seed, iter, lower, upper, lowerEx, upperEx, s.left, s.right)
		if gs, ws := sortRes(gotRes), sortRes(want); !slices.Equal(gs, ws) {
			t.Fatalf("%s\ngot  %v\nwant %v", desc, gs, ws)
		}
		slices.Sort(wantLate)
		if gl := lateIDs(late.Values()); !slices.Equal(gl, wantLate) {
			t.Fatalf("%s\nlate got %v want %v", desc, gl, wantLate)
		}
	}
}

// TestStreamSessionJoinOracle compares the API's session window join with
// a brute-force oracle when nothing is late (no watermark before the end):
// per key, the times of both sides sorted, a session is a run whose
// consecutive times differ by at most the gap (windows [ts, ts+gap) that
// touch merge); every left × right pair of a session is emitted once,
// stamped with the session's last time + gap - 1.
func TestStreamSessionJoinOracle(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	for iter := range 300 {
		s := randScript(rng)
		strip := func(steps []step) []step {
			return slices.DeleteFunc(slices.Clone(steps), func(st step) bool { return st.mark })
		}
		s.left, s.right = strip(s.left), strip(s.right)
		gap := int64(1 + rng.Intn(3))

		env := stream.NewEnv()
		l, r := s.sources(env)
		j := stream.Join[string, res](l, r).Where(elKey).EqualTo(elKey).
			Window(stream.SessionEventTime(time.Duration(gap) * time.Millisecond))
		got := stream.Collect(j.Apply(func(l, r el) res { return res{L: l.String(), R: r.String()} }))
		if err := env.Execute(); err != nil {
			t.Fatalf("seed %d iter %d: %v", seed, iter, err)
		}

		var all []el
		for _, st := range append(slices.Clone(s.left), s.right...) {
			all = append(all, st.e)
		}
		// session end of each element: group per key by sorted time.
		end := map[string]int64{}
		byKey := map[string][]el{}
		for _, e := range all {
			byKey[e.Key] = append(byKey[e.Key], e)
		}
		for _, es := range byKey {
			slices.SortFunc(es, func(a, b el) int { return int(a.Ts - b.Ts) })
			for i := 0; i < len(es); {
				k := i
				for k+1 < len(es) && es[k+1].Ts-es[k].Ts <= gap {
					k++
				}
				for _, e := range es[i : k+1] {
					end[e.String()] = es[k].Ts + gap
				}
				i = k + 1
			}
		}
		var want []res
		for _, x := range all {
			for _, y := range all {
				if x.Side == 'L' && y.Side == 'R' && x.Key == y.Key && end[x.String()] == end[y.String()] {
					want = append(want, res{L: x.String(), R: y.String(), Ts: end[x.String()] - 1})
				}
			}
		}
		var gotRes []res
		for _, g := range got.Timestamped() {
			g.Value.Ts = g.Ts
			gotRes = append(gotRes, g.Value)
		}
		if gs, ws := sortRes(gotRes), sortRes(want); !slices.Equal(gs, ws) {
			t.Fatalf("seed %d iter %d gap %d\nleft %v\nright %v\ngot  %v\nwant %v", seed, iter, gap, s.left, s.right, gs, ws)
		}
	}
}
