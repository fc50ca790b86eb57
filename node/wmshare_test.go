package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joinery/joinery/cluster"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// TestWmCombinePeers checks the global watermark's liveness and idleness
// rule over the board's entries: self left out, idle and dead peers left
// out, liveness by heartbeat change on this node's clock or by cluster
// membership, ties to the smallest name.
func TestWmCombinePeers(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	ttl := 3 * time.Second
	e := func(node string, wm int64, hb time.Time, idle bool) persistence.NodeWatermark {
		return persistence.NodeWatermark{Node: node, Watermark: wm, Heartbeat: hb, Idle: idle}
	}
	for _, c := range []struct {
		name    string
		seen    map[string]seenEntry
		alive   []string
		entries []persistence.NodeWatermark
		now     time.Time
		min     int64
		active  bool
		holder  string
	}{
		{name: "empty", now: t0, min: math.MaxInt64},
		{name: "self only", entries: []persistence.NodeWatermark{e("me", 5, t0, false)}, now: t0, min: math.MaxInt64},
		{name: "min of fresh peers", now: t0, entries: []persistence.NodeWatermark{
			e("me", 1, t0, false), e("a", 30, t0, false), e("b", 20, t0, false), e("c", 40, t0, false)},
			min: 20, active: true, holder: "node:b"},
		{name: "idle peer left out", now: t0, entries: []persistence.NodeWatermark{
			e("a", 30, t0, false), e("b", 20, t0, true)},
			min: 30, active: true, holder: "node:a"},
		{name: "all peers idle", now: t0, entries: []persistence.NodeWatermark{
			e("a", 30, t0, true), e("b", 20, t0, true)},
			min: math.MaxInt64},
		{name: "tie to the smallest name", now: t0, entries: []persistence.NodeWatermark{
			e("b", 20, t0, false), e("a", 20, t0, false)},
			min: 20, active: true, holder: "node:a"},
		{name: "ended peers", now: t0, entries: []persistence.NodeWatermark{
			e("a", math.MaxInt64, t0, false), e("b", math.MaxInt64, t0, false)},
			min: math.MaxInt64, active: true, holder: "node:a"},
		{name: "first sight of an old entry: dead", now: t0, entries: []persistence.NodeWatermark{
			e("dead", 5, t0.Add(-ttl-time.Millisecond), false), e("a", 30, t0.Add(-time.Second), false)},
			min: 30, active: true, holder: "node:a"},
		{name: "old entry of an alive member counts", now: t0, alive: []string{"slow"}, entries: []persistence.NodeWatermark{
			e("slow", 5, t0.Add(-time.Hour), false), e("a", 30, t0, false)},
			min: 5, active: true, holder: "node:slow"},
		{name: "heartbeat unchanged for ttl: dead", now: t0,
			seen:    map[string]seenEntry{"a": {heartbeat: t0.Add(-time.Minute), at: t0.Add(-ttl)}},
			entries: []persistence.NodeWatermark{e("a", 5, t0.Add(-time.Minute), false), e("b", 30, t0, false)},
			min:     30, active: true, holder: "node:b"},
		{name: "heartbeat unchanged for less than ttl: live", now: t0,
			seen:    map[string]seenEntry{"a": {heartbeat: t0.Add(-time.Minute), at: t0.Add(-ttl + time.Millisecond)}},
			entries: []persistence.NodeWatermark{e("a", 5, t0.Add(-time.Minute), false), e("b", 30, t0, false)},
			min:     5, active: true, holder: "node:a"},
		{name: "heartbeat moved, behind our clock: live", now: t0,
			seen:    map[string]seenEntry{"a": {heartbeat: t0.Add(-time.Hour), at: t0.Add(-time.Hour)}},
			entries: []persistence.NodeWatermark{e("a", 5, t0.Add(-time.Hour+time.Second), false), e("b", 30, t0, false)},
			min:     5, active: true, holder: "node:a"},
		{name: "heartbeat ahead of our clock: live", now: t0,
			entries: []persistence.NodeWatermark{e("a", 5, t0.Add(time.Hour), false)},
			min:     5, active: true, holder: "node:a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			seen := c.seen
			if seen == nil {
				seen = map[string]seenEntry{}
			}
			seen["gone"] = seenEntry{heartbeat: t0, at: t0}
			alive := map[string]bool{}
			for _, a := range c.alive {
				alive[a] = true
			}
			v := combinePeers(c.entries, "me", c.now, ttl, seen, alive)
			if v.min != c.min || v.active != c.active || v.holder != c.holder {
				t.Errorf("min %d active %v holder %q; want %d %v %q", v.min, v.active, v.holder, c.min, c.active, c.holder)
			}
			if _, ok := seen["gone"]; ok {
				t.Errorf("an entry no longer on the board is still remembered")
			}
			rows := 0
			for _, en := range c.entries {
				if en.Node != "me" {
					rows++
				}
			}
			if len(v.rows) != rows {
				t.Errorf("%d admin rows, want %d", len(v.rows), rows)
			}
		})
	}
	// A peer whose writes stop is dead ttl after its last change, by our clock.
	seen := map[string]seenEntry{}
	stuck := []persistence.NodeWatermark{e("a", 5, t0, false)}
	for _, step := range []struct {
		after  time.Duration
		active bool
	}{{0, true}, {ttl - time.Millisecond, true}, {ttl, false}} {
		if v := combinePeers(stuck, "me", t0.Add(step.after), ttl, seen, nil); v.active != step.active {
			t.Errorf("after %v: active %v, want %v", step.after, v.active, step.active)
		}
	}
}

// TestWmPublishedHoldsInflight checks that a node publishes no more than
// the local watermark before a batch still in flight, stamps elements with
// the global watermark, and publishes idle only with nothing in flight.
func TestWmPublishedHoldsInflight(t *testing.T) {
	spec := &job.Spec{Sources: []job.Source{{Name: "s"}}}
	evt, err := newEventTime(job.EventTimeOf(spec.Sources))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ev := func(ts int64) *keycore.Event { return &keycore.Event{Pos: record.Position{Source: "s"}, Ts: ts} }
	// A slower peer: elements are stamped with, and fires use, its watermark.
	evt.setPeers(peerView{min: 150, active: true, holder: "node:p"})
	e1, e2, e3 := ev(100), ev(200), ev(300)
	b1, b2 := &batch{}, &batch{}
	evt.mu.Lock()
	evt.observeLocked(b1, []*keycore.Event{e1}, now)
	fire := evt.observeLocked(b2, []*keycore.Event{e2, e3}, now)
	evt.mu.Unlock()
	if e1.Watermark != math.MinInt64 || e2.Watermark != 99 || e3.Watermark != 150 || fire != 150 {
		t.Errorf("stamps %d %d %d, fire at %d; want MinInt64 99 150, 150 (the peer's)", e1.Watermark, e2.Watermark, e3.Watermark, fire)
	}
	if wm, idle := evt.published(now); wm != math.MinInt64 || idle {
		t.Errorf("published %d idle %v with b1 in flight; want MinInt64, active", wm, idle)
	}
	evt.release(b1)
	if wm, _ := evt.published(now); wm != 99 {
		t.Errorf("published %d with b2 in flight; want 99 (the watermark before it)", wm)
	}
	evt.release(b2)
	if wm, _ := evt.published(now); wm != 299 {
		t.Errorf("published %d with nothing in flight; want 299", wm)
	}
	if _, g, holder := evt.view(now); g != 150 || holder != "node:p" {
		t.Errorf("view: global %d held by %q; want 150 by node:p", g, holder)
	}
	// The peer publishes less (it cannot, but a new one may), then falls
	// idle: the global never goes back, then follows the local watermark.
	evt.setPeers(peerView{min: 120, active: true})
	if g := evt.current(now); g != 150 {
		t.Errorf("global %d after a peer published less; want 150 (never backwards)", g)
	}
	evt.setPeers(peerView{min: math.MaxInt64})
	if g := evt.current(now); g != 299 {
		t.Errorf("global %d with idle peers; want 299 (the local one)", g)
	}
}

// TestWmTwoNodesWindowJoin runs a 10-second tumbling window join on two
// nodes of one cluster sharing one Redis: node A reads the left file at full
// speed, node B the right file slowly. With shared watermarks the union of
// the two nodes' outputs is the brute-force answer and nothing is late.
// Without (WatermarkSharing.Disabled, the "unshared" variant), A's watermark
// covers only its own file: it fires windows B still has data for, and B's
// elements arrive late — the variant checks the test sees that.
func TestWmTwoNodesWindowJoin(t *testing.T) {
	for _, shared := range []bool{true, false} {
		name := map[bool]string{true: "shared", false: "unshared"}[shared]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			rs := testutil.StartRedis(t)
			r := rand.New(rand.NewPCG(5, 6))
			type ev struct {
				K  string `json:"k"`
				Ts int64  `json:"ts"`
				V  string `json:"v"`
			}
			var left, right []ev
			for i := range 600 {
				e := ev{K: fmt.Sprint("k", r.IntN(12)), Ts: int64(i)*250 + int64(r.IntN(200)), V: fmt.Sprint("e", i)}
				if r.IntN(2) == 0 {
					left = append(left, e)
				} else {
					right = append(right, e)
				}
			}
			for name, evs := range map[string][]ev{"left.jsonl": left, "right.jsonl": right} {
				var sb strings.Builder
				for _, e := range evs {
					b, _ := json.Marshal(e)
					sb.Write(append(b, '\n'))
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(sb.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want := map[string]bool{}
			for _, l := range left {
				for _, rr := range right {
					if l.K == rr.K && l.Ts/10000 == rr.Ts/10000 {
						want[l.V+"|"+rr.V] = true
					}
				}
			}
			common := fmt.Sprintf(`name: wmshare
join:
  type: window
  mode: inner
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}
  window: {type: tumbling, size: 10s}
  project: [{name: lv, from: l.v}, {name: rv, from: r.v}]
sinks: [{type: table}]
state: {store: redis, redis: {addr: %q}}
`, rs.Addr)
			// Sharing is set in the job file (cluster.watermarks), as users do.
			opts := WatermarkSharing{}
			a := wmStart(t, dir, common+fmt.Sprintf(`
sources: [{name: ls, type: file, path: left.jsonl, side: left, watermark: {max_out_of_orderness: 1s}}]
cluster: {node_name: a, watermarks: {disabled: %v}}
`, !shared), opts)
			b := wmStart(t, dir, common+fmt.Sprintf(`
sources: [{name: rs, type: file, path: right.jsonl, side: right, watermark: {max_out_of_orderness: 1s}, rate: 400}]
cluster: {node_name: b, seeds: [%q], watermarks: {disabled: %v}}
`, a.GossipAddr(), !shared), opts)
			for _, n := range []*Node{a, b} {
				testutil.WaitFor(t, 20*time.Second, func() error {
					alive := 0
					for _, m := range n.Members() {
						if m.Status == cluster.StatusAlive {
							alive++
						}
					}
					if alive != 2 {
						return fmt.Errorf("%s sees %d alive members", n.Address(), alive)
					}
					return nil
				})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, n := range []*Node{a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = n.Run(ctx)
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("run node %d: %v", i, err)
				}
			}
			if shared {
				// B saw A's entry on the board.
				parts, _, _ := b.evt.view(time.Now())
				found := false
				for _, p := range parts {
					found = found || p.Partition == "node:a"
				}
				if !found {
					t.Errorf("node b's watermarks %v have no row for node a", parts)
				}
			}
			got := PairsOf(a.Table(), b.Table())
			rows := len(a.Table()) + len(b.Table())
			ms, ex := DiffSets(got, want)
			missing, extra := len(ms), len(ex)
			late := a.Stats().Late.Load() + b.Stats().Late.Load()
			t.Logf("%d pairs (%d rows: a %d, b %d), want %d; %d missing, %d extra; late %d", len(got), rows,
				len(a.Table()), len(b.Table()), len(want), missing, extra, late)
			if !shared {
				if late == 0 || missing == 0 {
					t.Errorf("without sharing nothing was late (%d) or missing (%d): node b is not behind node a, the test shows nothing", late, missing)
				}
				return
			}
			if missing+extra > 0 || len(want) == 0 || late != 0 {
				t.Errorf("two nodes: %d pairs, want %d (%d missing, %d extra); late %d, want 0", len(got), len(want), missing, extra, late)
			}
		})
	}
}

// wmStart starts a node from a job file written to dir.
func wmStart(t *testing.T, dir, yml string, share WatermarkSharing) *Node {
	t.Helper()
	return wmStartOpts(t, dir, yml, Options{WatermarkSharing: share})
}

func wmStartOpts(t *testing.T, dir, yml string, opts Options) *Node {
	t.Helper()
	p := filepath.Join(dir, fmt.Sprintf("job-%d.yaml", time.Now().UnixNano()))
	if err := os.WriteFile(p, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := job.Load(p)
	if err != nil {
		t.Fatalf("job: %v\n%s", err, yml)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts.Logger, opts.Stdout = log, io.Discard
	n, err := Start(context.Background(), spec, opts)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	return n
}

// TestWmTimerTickFiresForPeer makes a window due only because another
// node's watermark moved, while this node reads nothing: node A reads the
// left side from a pipe that stays open after its last line (its read
// blocks), node B then reads the right side, whose last window [90s, 100s)
// becomes due only when B's input ends and the global watermark jumps to
// A's. B's end-of-input flush leaves it to A (A has not ended), and A's
// source delivers nothing more: only A's timer tick can fire it.
func TestWmTimerTickFiresForPeer(t *testing.T) {
	dir := t.TempDir()
	rs := testutil.StartRedis(t)
	r := rand.New(rand.NewPCG(9, 10))
	type ev struct {
		K  string `json:"k"`
		Ts int64  `json:"ts"`
		V  string `json:"v"`
	}
	var left, right []ev
	for i := range 600 {
		e := ev{K: fmt.Sprint("k", r.IntN(6)), Ts: int64(i)*250 + int64(r.IntN(200)), V: fmt.Sprint("e", i)}
		switch {
		case r.IntN(2) == 0:
			left = append(left, e)
		case e.Ts < 98000: // B's last watermark (ts - 1001) stays below 99999
			right = append(right, e)
		}
	}
	lines := func(evs []ev) []byte {
		var sb strings.Builder
		for _, e := range evs {
			b, _ := json.Marshal(e)
			sb.Write(append(b, '\n'))
		}
		return []byte(sb.String())
	}
	if err := os.WriteFile(filepath.Join(dir, "right.jsonl"), lines(right), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, l := range left {
		for _, rr := range right {
			if l.K == rr.K && l.Ts/10000 == rr.Ts/10000 {
				want[l.V+"|"+rr.V] = true
			}
		}
	}
	common := fmt.Sprintf(`name: wmtick
join:
  type: window
  mode: inner
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}
  window: {type: tumbling, size: 10s}
  project: [{name: lv, from: l.v}, {name: rv, from: r.v}]
sinks: [{type: table}]
state: {store: redis, redis: {addr: %q}}
`, rs.Addr)
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	a := wmStartOpts(t, dir, common+`
sources: [{name: ls, type: file, path: "-", side: left, watermark: {max_out_of_orderness: 1s}}]
cluster: {node_name: a}
`, Options{Stdin: pr})
	b := wmStart(t, dir, common+fmt.Sprintf(`
sources: [{name: rs, type: file, path: right.jsonl, side: right, watermark: {max_out_of_orderness: 1s}}]
cluster: {node_name: b, seeds: [%q]}
`, a.GossipAddr()), WatermarkSharing{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	aDone := make(chan error, 1)
	go func() { aDone <- a.Run(ctx) }()
	go func() { _, _ = pw.Write(lines(left)) }()
	testutil.WaitFor(t, 20*time.Second, func() error {
		if in := a.Stats().In.Load(); in != int64(len(left)) {
			return fmt.Errorf("node a read %d of %d records", in, len(left))
		}
		return nil
	})
	if err := b.Run(ctx); err != nil {
		t.Fatalf("run b: %v", err)
	}
	result := func() (map[string]bool, error) {
		got := PairsOf(a.Table(), b.Table())
		if missing, extra := DiffSets(got, want); len(missing)+len(extra) > 0 {
			return got, fmt.Errorf("%d pairs, want %d (%d missing, %d extra)", len(got), len(want), len(missing), len(extra))
		}
		return got, nil
	}
	// A's input is still open: every pair comes from fires, the last
	// window's from A's tick.
	testutil.WaitFor(t, 15*time.Second, func() error { _, err := result(); return err })
	pw.Close()
	if err := <-aDone; err != nil {
		t.Fatalf("run a: %v", err)
	}
	if _, err := result(); err != nil {
		t.Error(err)
	}
	if late := a.Stats().Late.Load() + b.Stats().Late.Load(); late != 0 || len(want) == 0 {
		t.Errorf("late %d, want 0 (%d pairs expected)", late, len(want))
	}
}
