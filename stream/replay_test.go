package stream_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/replay"
	"github.com/joinery/joinery/stream"
)

// replayOf runs s's arrivals, with a watermark line wherever the combined
// watermark moved, through replay.RunEvents with the bare spec yml (each
// element's value is its String), and returns the outputs and the late
// elements.
func replayOf(t *testing.T, yml string, s script) (outs []res, late []string) {
	t.Helper()
	jb, err := replay.ParseJob([]byte(yml))
	if err != nil {
		t.Fatalf("replay spec: %v\n%s", err, yml)
	}
	var in bytes.Buffer
	wm := int64(math.MinInt64)
	for _, a := range s.arrivals {
		if a.wm > wm && a.wm != math.MaxInt64 {
			wm = a.wm
			fmt.Fprintf(&in, "{\"watermark\":%d}\n", wm)
		}
		side := "left"
		if a.e.Side == 'R' {
			side = "right"
		}
		fmt.Fprintf(&in, "{\"side\":%q,\"key\":%q,\"ts\":%d,\"value\":%q}\n", side, a.e.Key, a.e.Ts, a.e.String())
	}
	var out, lateOut bytes.Buffer
	if _, err := replay.RunEvents(jb, &in, &out, replay.Options{Late: &lateOut}); err != nil {
		t.Fatalf("replay: %v\n%s", err, in.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line == "" {
			continue
		}
		var o struct {
			Left, Right *string
			Ts          int64
		}
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("replay output %q: %v", line, err)
		}
		r := res{Ts: o.Ts}
		if o.Left != nil {
			r.L = *o.Left
		}
		if o.Right != nil {
			r.R = *o.Right
		}
		outs = append(outs, r)
	}
	for _, line := range strings.Split(strings.TrimSpace(lateOut.String()), "\n") {
		if line == "" {
			continue
		}
		var l struct{ Value string }
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("replay late line %q: %v", line, err)
		}
		late = append(late, l.Value)
	}
	slices.Sort(late)
	return outs, late
}

// resOf converts an API result stream's elements, checking each is stamped
// with its own Ts.
func resOf(t *testing.T, desc string, got *stream.Collected[res]) []res {
	t.Helper()
	var out []res
	for _, g := range got.Timestamped() {
		if g.Ts != g.Value.Ts {
			t.Fatalf("%s: result %v stamped %d", desc, g.Value, g.Ts)
		}
		out = append(out, g.Value)
	}
	return out
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// TestStreamTimeBoundedReplay runs random inputs through the API's
// time-bounded join — every mode, left semi included, with a bounded
// range or a half-bounded one (AtLeast, AtMost) with a TTL or none — and
// through replay with the equivalent job (mode, interval, open, ttl): the
// outputs, their times and the late elements are the same.
func TestStreamTimeBoundedReplay(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	modes := []string{"inner", "left", "right", "full", "semi"}
	outputs := map[string]int{} // by mode and range kind: the test compares something
	for iter := range 300 {
		s := randScript(rng)
		mode := modes[rng.Intn(len(modes))]
		env := stream.NewEnv()
		l, r := s.sources(env)
		b := stream.TimeBoundedJoin[res](stream.KeyBy(l, elKey), stream.KeyBy(r, elKey))
		lower := int64(rng.Intn(9) - 5)
		upper := lower + int64(rng.Intn(6))
		yml := "type: time-bounded\nmode: " + mode + "\n"
		var j *stream.TimeBoundedJoined[res, el, el, string]
		minTTL := int64(0) // a half-bounded range's least TTL: positive, and the bound's reach
		switch rng.Intn(3) {
		case 0:
			j = b.Between(ms(lower), ms(upper))
			yml += fmt.Sprintf("interval: {lower: %d, upper: %d}\n", lower, upper)
		case 1:
			j = b.AtLeast(ms(lower))
			yml += fmt.Sprintf("interval: {lower: %d}\nopen: upper\n", lower)
			minTTL = max(1, lower)
		default:
			j = b.AtMost(ms(upper))
			yml += fmt.Sprintf("interval: {upper: %d}\nopen: lower\n", upper)
			minTTL = max(1, -upper)
		}
		if minTTL > 0 {
			if rng.Intn(3) == 0 {
				j.NoTTL()
				yml += "ttl: none\n"
			} else {
				ttl := minTTL + int64(rng.Intn(8))
				j.TTL(ms(ttl))
				yml += fmt.Sprintf("ttl: %d\n", ttl)
			}
		}
		switch mode {
		case "left":
			j.LeftOuter()
		case "right":
			j.RightOuter()
		case "full":
			j.FullOuter()
		case "semi":
			j.LeftSemi()
		}
		got := stream.Collect(j.Process(func(l, r *el) res {
			var o res
			if l != nil {
				o.L, o.Ts = l.String(), l.Ts
			}
			if r != nil {
				o.R, o.Ts = r.String(), max(o.Ts, r.Ts)
				if l == nil {
					o.Ts = r.Ts
				}
			}
			return o
		}))
		late := stream.Collect(j.Late())
		desc := fmt.Sprintf("seed %d iter %d\n%s\nleft %v\nright %v", seed, iter, yml, s.left, s.right)
		if err := env.Execute(); err != nil {
			t.Fatalf("%s\n%v", desc, err)
		}
		want, wantLate := replayOf(t, yml, s)
		if gs, ws := sortRes(resOf(t, desc, got)), sortRes(want); !slices.Equal(gs, ws) {
			t.Fatalf("%s\nAPI    %v\nreplay %v", desc, gs, ws)
		}
		outputs[fmt.Sprint(mode, " open ", minTTL > 0)] += len(want)
		if gl := lateIDs(late.Values()); !slices.Equal(gl, wantLate) {
			t.Fatalf("%s\nlate: API %v, replay %v", desc, gl, wantLate)
		}
	}
	for _, m := range modes {
		for _, open := range []bool{false, true} {
			if k := fmt.Sprint(m, " open ", open); outputs[k] == 0 {
				t.Errorf("seed %d: no output at all for %s", seed, k)
			}
		}
	}
	t.Logf("outputs compared: %v", outputs)
}

// TestStreamWindowSemiReplay runs random inputs through the API's left
// semi window join (LeftSemiApply) over tumbling windows and through
// replay's window join with mode semi: the outputs, their times and the
// late elements are the same.
func TestStreamWindowSemiReplay(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	outputs := 0
	for iter := range 300 {
		s := randScript(rng)
		size := int64(1 + rng.Intn(6))
		env := stream.NewEnv()
		l, r := s.sources(env)
		w := stream.Join[string, res](l, r).Where(elKey).EqualTo(elKey).Window(stream.TumblingEventTime(ms(size)))
		got := stream.Collect(w.LeftSemiApply(func(l el) res { return res{L: l.String()} }))
		late := stream.Collect(w.Late())
		yml := fmt.Sprintf("type: window\nmode: semi\nwindow: {assigner: tumbling, size: %d}\n", size)
		desc := fmt.Sprintf("seed %d iter %d\n%s\nleft %v\nright %v", seed, iter, yml, s.left, s.right)
		if err := env.Execute(); err != nil {
			t.Fatalf("%s\n%v", desc, err)
		}
		var gotRes []res
		for _, g := range got.Timestamped() {
			gotRes = append(gotRes, res{L: g.Value.L, Ts: g.Ts}) // a semi output is stamped with its window's end - 1
		}
		want, wantLate := replayOf(t, yml, s)
		outputs += len(want)
		if gs, ws := sortRes(gotRes), sortRes(want); !slices.Equal(gs, ws) {
			t.Fatalf("%s\nAPI    %v\nreplay %v", desc, gs, ws)
		}
		if gl := lateIDs(late.Values()); !slices.Equal(gl, wantLate) {
			t.Fatalf("%s\nlate: API %v, replay %v", desc, gl, wantLate)
		}
	}
	if outputs == 0 {
		t.Errorf("seed %d: no semi output at all", seed)
	}
}
