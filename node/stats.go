package node

import (
	"github.com/joinery/joinery/record"
	"maps"
	"sync"
	"sync/atomic"
)

// Stats counts what a node's ingest did. Safe for concurrent use.
type Stats struct {
	In      atomic.Int64 // records read from sources
	Events  atomic.Int64 // routed events sent to key actors
	Out     atomic.Int64 // outputs written to sinks
	Skipped atomic.Int64 // events key actors had already applied (replays)
	Tombs   atomic.Int64 // tombstones skipped
	Retries atomic.Int64 // key requests sent again (actor moved, passivated, timed out)

	Activations  atomic.Int64 // key actors activated on this node
	Passivations atomic.Int64 // key actors stopped on this node (idle or shutdown)
	FencedWrites atomic.Int64 // state writes refused: a newer activation owned the key

	mu  sync.Mutex
	bad map[string]int64 // reason -> count of records that could not be decoded or routed
}

func newStats() *Stats { return &Stats{bad: map[string]int64{}} }

func (s *Stats) addBad(reason string) {
	s.mu.Lock()
	s.bad[reason]++
	s.mu.Unlock()
}

// Bad returns the count of rejected records per reason.
func (s *Stats) Bad() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.bad)
}

// BadTotal is the number of rejected records.
func (s *Stats) BadTotal() int64 {
	var t int64
	for _, v := range s.Bad() {
		t += v
	}
	return t
}

// Activated implements actors.Events.
func (s *Stats) Activated(string, record.Key) { s.Activations.Add(1) }

// Passivated implements actors.Events.
func (s *Stats) Passivated(string, record.Key) { s.Passivations.Add(1) }

// ActiveKeys is the number of key actors active on this node.
func (s *Stats) ActiveKeys() int64 { return s.Activations.Load() - s.Passivations.Load() }

// Fenced implements actors.Events.
func (s *Stats) Fenced(string, record.Key) { s.FencedWrites.Add(1) }
