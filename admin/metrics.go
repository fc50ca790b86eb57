package admin

import (
	"net/http"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are a node's Prometheus collectors, registered on their own
// registry (never prometheus.DefaultRegisterer). Node code updates the
// exported fields directly, e.g.
//
//	m.RecordsIn.WithLabelValues(job, source).Add(float64(n))
//	m.SnapshotSeconds.Observe(time.Since(start).Seconds())
//
// Labels are low-cardinality by design: job, source, sink, partition and a
// bounded set of reject reasons; never a join key (see HotKeys for those).
// All collectors are safe for concurrent use.
type Metrics struct {
	// RecordsIn counts records read from sources: joinery_records_in_total{job,source}.
	RecordsIn *prometheus.CounterVec
	// Outputs counts records written to sinks: joinery_outputs_total{job,sink}.
	Outputs *prometheus.CounterVec
	// Rejected counts records that could not be decoded or routed:
	// joinery_rejected_total{job,source,reason}; reason is a fixed word such
	// as "json", "op" or "key", never free text.
	Rejected *prometheus.CounterVec
	// Late counts events dropped as late: joinery_late_total{job}.
	Late *prometheus.CounterVec
	// KeyRequests counts the requests this node's readers sent key actors,
	// by where the key's actor lives: joinery_key_requests_total{job,where},
	// where "local" (this node) or "remote" (a network hop; with sources
	// partitioned by the join key it stays 0 in steady state).
	KeyRequests *prometheus.CounterVec
	// SkippedReplayed counts events key actors had already applied:
	// joinery_skipped_replayed_total{job}.
	SkippedReplayed *prometheus.CounterVec
	// KeysActive is the number of activated key actors on this node:
	// joinery_keys_active{job}.
	KeysActive *prometheus.GaugeVec
	// Passivations counts key actors stopped on this node, by cause (idle,
	// budget, request, stopped): joinery_passivations_total{job,cause}.
	Passivations *prometheus.CounterVec
	// KeysBudgetBytes is the memory budget of this node's live key actors
	// (0: none) and KeysAccountedBytes what they are accounted now:
	// joinery_keys_budget_bytes{job}, joinery_keys_accounted_bytes{job}.
	KeysBudgetBytes, KeysAccountedBytes *prometheus.GaugeVec
	// StateBytes is the size of the key state held on this node:
	// joinery_state_bytes{job}.
	StateBytes *prometheus.GaugeVec
	// StateOverBudget is 1 once the node stopped reading its sources because the
	// key state its embedded store holds passed the memory budget:
	// joinery_state_over_budget{job}.
	StateOverBudget *prometheus.GaugeVec
	// SnapshotSeconds is the latency of one snapshot write (batch) to the
	// store: joinery_snapshot_seconds.
	SnapshotSeconds prometheus.Histogram
	// SnapshotBytes counts snapshot bytes written: joinery_snapshot_bytes_total.
	SnapshotBytes prometheus.Counter
	// FencedWrites counts writes refused because another node holds a newer
	// epoch: joinery_fenced_writes_total{job}.
	FencedWrites *prometheus.CounterVec
	// RedisErrors counts failed Redis calls of the state store and the
	// Redis connectors (no answer or an error reply; see redisopts.Failed):
	// joinery_redis_errors_total.
	RedisErrors prometheus.Counter
	// ClusterMembers is the number of alive members this node sees:
	// joinery_cluster_members.
	ClusterMembers prometheus.Gauge
	// DeclaredDead is 1 once this node learned its peers declared it dead
	// (it must be restarted to be placed on again): joinery_cluster_declared_dead.
	DeclaredDead prometheus.Gauge
	// SourceReading is 1 while this node reads a source and 0 while it
	// waits for another node to stop reading it (a Redis stream has one
	// reader at a time): joinery_source_reading{job,source}.
	SourceReading *prometheus.GaugeVec
	// WatermarkLag is how far each partition's watermark is behind now:
	// joinery_watermark_lag_seconds{job,source,partition}.
	WatermarkLag *prometheus.GaugeVec
	// SourceLag is how many records each partition a Redis stream or
	// Kafka source reads holds after the last one committed (Redis: the
	// group's pending and not yet delivered entries; Kafka: the high
	// watermark minus the committed offset), asked every 15s:
	// joinery_source_lag_records{job,source,partition}.
	SourceLag *prometheus.GaugeVec
	// LostRanges counts sources that could not re-read what the state
	// store lost (it went back in time and the source no longer holds the
	// range): joinery_source_lost_ranges_total{job,source}. The node stops.
	LostRanges *prometheus.CounterVec
	// RevokeTimeouts counts the revokes of a Kafka source (a rebalance
	// taking partitions from this node) whose wait for the records in
	// flight from them to be committed ran out (kafka.revoke_wait): their
	// new owner reads those records again.
	// joinery_source_revoke_timeouts_total{job,source}.
	RevokeTimeouts *prometheus.CounterVec
	// DeadLetters counts records written to the job's dead-letter output
	// (bad input, late events), by the source that read them:
	// joinery_dead_letters_total{job,source}.
	DeadLetters *prometheus.CounterVec
	// Watermark is this node's global event-time watermark, in Unix
	// seconds (the minimum over its active partitions and the peers'
	// shared ones), set as events arrive; event-time jobs only:
	// joinery_watermark_seconds{job}.
	Watermark *prometheus.GaugeVec

	reg *prometheus.Registry
}

const namespace = "joinery"

// NewMetrics returns the collectors, registered on a new registry. Go
// runtime and process collectors are not included; see RegisterRuntime.
func NewMetrics() *Metrics {
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	}
	gaugeVec := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
	}
	m := &Metrics{
		RecordsIn:          counterVec("records_in_total", "Records read from sources.", "job", "source"),
		Outputs:            counterVec("outputs_total", "Records written to sinks.", "job", "sink"),
		Rejected:           counterVec("rejected_total", "Records rejected (not decodable or routable), by reason.", "job", "source", "reason"),
		Late:               counterVec("late_total", "Events dropped because they arrived behind the watermark.", "job"),
		KeyRequests:        counterVec("key_requests_total", "Requests this node's readers sent key actors, by where the actor lives (local, remote).", "job", "where"),
		SkippedReplayed:    counterVec("skipped_replayed_total", "Replayed events key actors had already applied.", "job"),
		KeysActive:         gaugeVec("keys_active", "Key actors activated on this node.", "job"),
		StateBytes:         gaugeVec("state_bytes", "Bytes of key state held on this node.", "job"),
		StateOverBudget:    gaugeVec("state_over_budget", "1 once this node stopped reading its sources: its embedded store's key state passed the memory budget.", "job"),
		Passivations:       counterVec("passivations_total", "Key actors stopped on this node, by cause: idle, budget (the memory budget), request, stopped (a failed or fenced write, shutdown).", "job", "cause"),
		KeysBudgetBytes:    gaugeVec("keys_budget_bytes", "Memory budget of the live key actors on this node (0: none).", "job"),
		KeysAccountedBytes: gaugeVec("keys_accounted_bytes", "Memory the live key actors on this node are accounted (activation + state estimate).", "job"),
		SnapshotSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "snapshot_seconds",
			Help:    "Latency of one snapshot batch write to the store.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5ms .. ~4s
		}),
		SnapshotBytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "snapshot_bytes_total",
			Help: "Snapshot bytes written to the store."}),
		FencedWrites: counterVec("fenced_writes_total", "Snapshot writes refused because another node holds a newer epoch.", "job"),
		RedisErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "redis_errors_total",
			Help: "Failed Redis calls (no answer or an error reply) of the state store and the Redis sources and sinks."}),
		ClusterMembers: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "cluster_members",
			Help: "Alive cluster members this node sees."}),
		DeclaredDead: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "cluster_declared_dead",
			Help: "1 once this node's peers declared it dead: they no longer place keys on it until it restarts."}),
		SourceReading:  gaugeVec("source_reading", "1 while this node reads the source, 0 while another node does (a Redis stream's lease).", "job", "source"),
		WatermarkLag:   gaugeVec("watermark_lag_seconds", "How far each partition's watermark is behind the wall clock.", "job", "source", "partition"),
		SourceLag:      gaugeVec("source_lag_records", "Records each partition of a Redis stream or Kafka source holds after the last one committed (read or not).", "job", "source", "partition"),
		LostRanges:     counterVec("source_lost_ranges_total", "Times a source could not re-read records the state store lost (gone from the source: retention, trim); the node stops.", "job", "source"),
		RevokeTimeouts: counterVec("source_revoke_timeouts_total", "Times a Kafka source let partitions go in a rebalance before the records in flight from them were committed (kafka.revoke_wait ran out): their new owner reads those records again.", "job", "source"),
		DeadLetters:    counterVec("dead_letters_total", "Records written to the dead-letter output (bad input, late events), by source.", "job", "source"),
		Watermark:      gaugeVec("watermark_seconds", "This node's global event-time watermark (Unix seconds), set as events arrive; event-time jobs only.", "job"),
		reg:            prometheus.NewRegistry(),
	}
	m.reg.MustRegister(m.RecordsIn, m.Outputs, m.Rejected, m.Late, m.KeyRequests, m.SkippedReplayed, m.KeysActive,
		m.Passivations, m.KeysBudgetBytes, m.KeysAccountedBytes, m.StateBytes, m.StateOverBudget, m.SnapshotSeconds, m.SnapshotBytes, m.FencedWrites, m.RedisErrors,
		m.ClusterMembers, m.DeclaredDead, m.SourceReading, m.WatermarkLag, m.SourceLag, m.LostRanges, m.RevokeTimeouts, m.DeadLetters, m.Watermark)
	return m
}

// Registry is the registry the collectors are on. Register further
// collectors on it (not on the global registry) to serve them on /metrics.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// gcRuntimeMetrics are the runtime/metrics the Go collector adds to its
// defaults: the collector's CPU (go_cpu_classes_gc_*_cpu_seconds_total,
// the total and its mark and pause parts, beside the process's total and
// idle time: go_cpu_classes_{total,idle}_cpu_seconds_total) and its completed cycles
// (go_gc_cycles_total_gc_cycles_total): a node's GC time and count, as
// Flink reports its JVM's (docs/operations/alerts.md, "Garbage collector").
var gcRuntimeMetrics = collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/cpu/classes/(gc/|idle:|total:)|^/gc/cycles/total:`)}

// RegisterRuntime adds the Go runtime (go_*) and process (process_*)
// collectors to the registry. Call it at most once.
func (m *Metrics) RegisterRuntime() error {
	if err := m.reg.Register(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(gcRuntimeMetrics))); err != nil {
		return err
	}
	return m.reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// InitJob creates job's series that count events (and the over-budget
// flag) at 0 for each of its sources, so they are on /metrics from the
// start: an alert on increase() or rate() sees the first event (a series
// that appears with 1 has no increase), and a dashboard shows 0, not "no
// data". Series whose labels only events tell (rejected_total's reason,
// a partition's watermark lag) still appear with their first event.
func (m *Metrics) InitJob(job string, sources []string) {
	for _, src := range sources {
		m.RecordsIn.WithLabelValues(job, src)
		m.DeadLetters.WithLabelValues(job, src)
		m.LostRanges.WithLabelValues(job, src)
		m.RevokeTimeouts.WithLabelValues(job, src)
	}
	m.Outputs.WithLabelValues(job, "all")
	m.Late.WithLabelValues(job)
	m.SkippedReplayed.WithLabelValues(job)
	m.FencedWrites.WithLabelValues(job)
	m.KeysActive.WithLabelValues(job)
	m.StateOverBudget.WithLabelValues(job)
}

// ForgetJob removes every series labelled with job (for a job that stopped
// on this node), so gauges of a gone job do not linger.
func (m *Metrics) ForgetJob(job string) {
	l := prometheus.Labels{"job": job}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		m.RecordsIn.MetricVec, m.Outputs.MetricVec, m.Rejected.MetricVec, m.Late.MetricVec,
		m.SkippedReplayed.MetricVec, m.KeysActive.MetricVec, m.StateBytes.MetricVec, m.StateOverBudget.MetricVec,
		m.FencedWrites.MetricVec, m.WatermarkLag.MetricVec, m.SourceLag.MetricVec, m.Passivations.MetricVec, m.KeysBudgetBytes.MetricVec,
		m.KeysAccountedBytes.MetricVec, m.SourceReading.MetricVec, m.LostRanges.MetricVec, m.RevokeTimeouts.MetricVec, m.DeadLetters.MetricVec,
		m.Watermark.MetricVec,
	} {
		v.DeletePartialMatch(l)
	}
}

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
