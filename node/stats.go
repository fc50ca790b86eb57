package node

import (
	"github.com/joinery/joinery/actors"
	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/record"
	"maps"
	"sync"
	"sync/atomic"
)

// Stats counts what a node's readers did. Safe for concurrent use.
type Stats struct {
	In      atomic.Int64 // records read from sources
	Events  atomic.Int64 // routed events sent to key actors
	Out     atomic.Int64 // outputs written to sinks
	Skipped atomic.Int64 // events key actors had already applied (replays)
	Tombs   atomic.Int64 // tombstones skipped
	Late    atomic.Int64 // inputs event-time joins found late
	Retries atomic.Int64 // key requests sent again (actor moved, passivated, timed out)

	DeadLettered atomic.Int64 // records written to the dead-letter output
	SkippedBad   atomic.Int64 // bad records skipped by policy (on_bad_input: skip, on_truncate: ignore)
	Truncates    atomic.Int64 // Debezium truncate events seen
	Duplicates   atomic.Int64 // Debezium changes dropped as replays (source position not newer)
	Filtered     atomic.Int64 // records (or CDC changes) the source's filter dropped
	Unmatched    atomic.Int64 // CDC changes of a row with a null join value, of a side the join does not keep

	Activations  atomic.Int64 // key actors activated on this node
	Passivations atomic.Int64 // key actors stopped on this node (idle or shutdown)
	// BudgetPassivations counts those the memory budget stopped.
	BudgetPassivations atomic.Int64
	budget             *actors.Budget   // set once at start, before any key actor
	byCause            map[string]int64 // passivations by cause; guarded by mu
	FencedWrites       atomic.Int64     // state writes refused: a newer activation owned the key

	mu       sync.Mutex
	bad      map[string]int64            // reason -> count of records that could not be decoded or routed
	badBySrc map[string]map[string]int64 // source -> reason -> count

	job string
	m   *admin.Metrics // the same counts for Prometheus
}

func newStats(job string, m *admin.Metrics) *Stats {
	return &Stats{bad: map[string]int64{}, badBySrc: map[string]map[string]int64{}, job: job, m: m}
}

func (s *Stats) addBad(source, reason string) {
	s.mu.Lock()
	s.bad[reason]++
	if s.badBySrc[source] == nil {
		s.badBySrc[source] = map[string]int64{}
	}
	s.badBySrc[source][reason]++
	s.mu.Unlock()
	s.m.Rejected.WithLabelValues(s.job, source, reason).Inc()
}

func (s *Stats) addIn(source string, n int) {
	s.In.Add(int64(n))
	s.m.RecordsIn.WithLabelValues(s.job, source).Add(float64(n))
}

func (s *Stats) addOut(n int) {
	s.Out.Add(int64(n))
	s.m.Outputs.WithLabelValues(s.job, "all").Add(float64(n))
}

func (s *Stats) addSkipped(n int) {
	s.Skipped.Add(int64(n))
	s.m.SkippedReplayed.WithLabelValues(s.job).Add(float64(n))
}

// Bad returns the count of rejected records per reason.
func (s *Stats) Bad() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.bad)
}

// BadBySource returns the count of rejected records per source and reason
// (the same counts as joinery_rejected_total{source,reason}).
func (s *Stats) BadBySource() map[string]map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]map[string]int64, len(s.badBySrc))
	for src, m := range s.badBySrc {
		out[src] = maps.Clone(m)
	}
	return out
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
func (s *Stats) Activated(string, record.Key) {
	s.Activations.Add(1)
	s.m.KeysActive.WithLabelValues(s.job).Inc()
	s.accounted()
}

// accounted refreshes joinery_keys_accounted_bytes (on activations and
// passivations, not per event).
func (s *Stats) accounted() {
	if b := s.budget; b != nil {
		s.m.KeysAccountedBytes.WithLabelValues(s.job).Set(float64(b.Stats().Bytes))
	}
}

// Passivated implements actors.Events.
func (s *Stats) Passivated(string, record.Key) {
	s.Passivations.Add(1)
	s.m.KeysActive.WithLabelValues(s.job).Dec()
}

// PassivatedBecause implements actors.EventsWithCause.
func (s *Stats) PassivatedBecause(_ string, cause string) {
	s.m.Passivations.WithLabelValues(s.job, cause).Inc()
	s.mu.Lock()
	if s.byCause == nil {
		s.byCause = map[string]int64{}
	}
	s.byCause[cause]++
	s.mu.Unlock()
	s.accounted()
	if cause == actors.CauseBudget {
		s.BudgetPassivations.Add(1)
	}
}

// ActiveKeys is the number of key actors active on this node.
func (s *Stats) ActiveKeys() int64 { return s.Activations.Load() - s.Passivations.Load() }

// Fenced implements actors.Events.
func (s *Stats) Fenced(string, record.Key) {
	s.FencedWrites.Add(1)
	s.m.FencedWrites.WithLabelValues(s.job).Inc()
}

// PassivationsByCause counts key actor passivations by cause (idle, budget,
// request, stopped).
func (s *Stats) PassivationsByCause() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.byCause)
}

// initMetrics puts the job's event counters on /metrics at 0 before the
// first event (admin.Metrics.InitJob; the passivation causes are the
// actors' own), and the Go runtime and process collectors (go_*,
// process_*: the dashboard's memory panel reads process_resident_memory_bytes).
func (n *Node) initMetrics() {
	srcs := make([]string, 0, len(n.spec.Sources))
	for _, s := range n.spec.Sources {
		srcs = append(srcs, s.Name)
	}
	n.metrics.InitJob(n.spec.Name, srcs)
	for _, cause := range []string{actors.CauseIdle, actors.CauseBudget, actors.CauseRequest, actors.CauseStopped} {
		n.metrics.Passivations.WithLabelValues(n.spec.Name, cause)
	}
	if err := n.metrics.RegisterRuntime(); err != nil {
		n.log.Warn("metrics: runtime collectors not registered", "err", err)
	}
}
