package timers

import (
	"math"
	"testing"
)

func TestCombineWatermarks(t *testing.T) {
	minI, maxI := int64(math.MinInt64), int64(math.MaxInt64)
	for _, c := range []struct {
		prev, local int64
		localActive bool
		peers       int64
		peersActive bool
		want        int64
		why         string
	}{
		{minI, minI, true, maxI, false, minI, "start"},
		{minI, 100, true, maxI, false, 100, "alone: the local watermark"},
		{minI, 100, true, 50, true, 50, "a slower peer holds it back"},
		{minI, 100, true, 150, true, 100, "a faster peer does not"},
		{minI, 100, false, 50, true, 50, "idle here: the peers'"},
		{minI, 100, true, 50, false, 100, "idle peers: the local one"},
		{70, 100, false, 50, false, 70, "everything idle: unchanged"},
		{70, 100, true, 50, true, 70, "never backwards"},
		{70, maxI, true, maxI, true, maxI, "everyone ended"},
		{70, maxI, true, 900, true, 900, "a peer still runs"},
	} {
		if got := CombineWatermarks(c.prev, c.local, c.localActive, c.peers, c.peersActive); got != c.want {
			t.Errorf("%s: %d, want %d", c.why, got, c.want)
		}
	}
}

// TestGlobal walks a Global through a sequence of steps, each checking the
// combined and published watermarks after it.
func TestGlobal(t *testing.T) {
	type step struct {
		do            func(g *Global[string])
		local         int64
		localActive   bool
		wantGlobal    int64
		wantPublished int64
		wantIdle      bool
		why           string
	}
	minI, maxI := int64(math.MinInt64), int64(math.MaxInt64)
	steps := []step{
		{nil, minI, true, minI, minI, false, "start"},
		{func(g *Global[string]) { g.SetPeers(150, true) }, 100, true, 100, 100, false, "a faster peer"},
		{func(g *Global[string]) { g.Hold("b1", 100) }, 200, true, 150, 100, false, "b1 in flight holds publishing at 100; the peer holds the global"},
		{func(g *Global[string]) { g.Hold("b2", 200) }, 300, true, 150, 100, false, "b1 and b2 in flight"},
		{func(g *Global[string]) { g.Release("b1") }, 300, true, 150, 200, false, "b2 still in flight"},
		{func(g *Global[string]) { g.Release("b2") }, 300, true, 150, 300, false, "nothing in flight"},
		{func(g *Global[string]) { g.SetPeers(120, true) }, 300, true, 150, 300, false, "a peer publishes less: never backwards"},
		{func(g *Global[string]) { g.SetPeers(maxI, false) }, 300, true, 300, 300, false, "idle peers: the local one"},
		{nil, 300, false, 300, 300, true, "everything idle: unchanged, published idle"},
		{func(g *Global[string]) { g.Hold("b3", 300) }, 400, false, 300, 300, false, "idle partitions, but a batch in flight: not idle"},
	}
	g := NewGlobal[string]()
	for _, s := range steps {
		if s.do != nil {
			s.do(g)
		}
		if got := g.Combine(s.local, s.localActive); got != s.wantGlobal {
			t.Errorf("%s: global %d, want %d", s.why, got, s.wantGlobal)
		}
		wm, idle := g.Published(s.local, !s.localActive)
		if wm != s.wantPublished || idle != s.wantIdle {
			t.Errorf("%s: published %d idle %v, want %d idle %v", s.why, wm, idle, s.wantPublished, s.wantIdle)
		}
	}
	if g.Release("b1") {
		t.Errorf("Release of a batch already released reported it in flight")
	}
}
