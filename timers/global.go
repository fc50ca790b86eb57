package timers

import "math"

// CombineWatermarks is the global watermark rule of a job whose sources
// several nodes read: the minimum of the local watermark (when some local
// partition is active) and the peers' (when some live peer is active),
// never below prev; prev when nothing is active.
func CombineWatermarks(prev, local int64, localActive bool, peers int64, peersActive bool) int64 {
	switch {
	case localActive && peersActive:
		return max(prev, min(local, peers))
	case localActive:
		return max(prev, local)
	case peersActive:
		return max(prev, peers)
	}
	return prev
}

// Global is one node's view of the global watermark: its local watermark
// (the caller's Watermarks) combined with its peers' published ones, and
// what it publishes to them in turn. Batches of elements in flight, keyed
// by K, hold back what the node publishes: a peer firing at a watermark
// past an element still on its way to its key would overtake it.
//
// Global holds no lock, starts no goroutine and reads no clock: the caller
// passes the local watermark in and serialises calls (node/eventtime.go holds
// its mutex around them).
type Global[K comparable] struct {
	global      int64 // the watermark last combined: never decreases
	peers       int64 // minimum of the live, active peers' watermarks
	peersActive bool
	inflight    map[K]int64 // per batch in flight, the local watermark before it
}

// NewGlobal returns a Global with no peers and nothing in flight, at the
// start of time.
func NewGlobal[K comparable]() *Global[K] {
	return &Global[K]{global: math.MinInt64, peers: math.MaxInt64, inflight: map[K]int64{}}
}

// SetPeers installs the peers' combined watermark: the minimum of the live,
// active peers' (math.MaxInt64 when none is active) and whether any is.
func (g *Global[K]) SetPeers(min int64, active bool) { g.peers, g.peersActive = min, active }

// Combine returns the global watermark for the local watermark (active:
// some local partition holds it, see Watermarks.Holder) and records it.
func (g *Global[K]) Combine(local int64, localActive bool) int64 {
	g.global = CombineWatermarks(g.global, local, localActive, g.peers, g.peersActive)
	return g.global
}

// Hold marks batch k in flight, sent when the local watermark was before.
func (g *Global[K]) Hold(k K, before int64) { g.inflight[k] = before }

// Release ends k's flight and reports whether it was in flight.
func (g *Global[K]) Release(k K) bool {
	_, ok := g.inflight[k]
	delete(g.inflight, k)
	return ok
}

// Published is what the node tells its peers: the local watermark, but no
// more than the local watermark before any batch still in flight, and
// whether it holds nothing back (localIdle: every local partition idle,
// and nothing in flight).
func (g *Global[K]) Published(local int64, localIdle bool) (int64, bool) {
	wm := local
	for _, before := range g.inflight {
		wm = min(wm, before)
	}
	return wm, localIdle && len(g.inflight) == 0
}
