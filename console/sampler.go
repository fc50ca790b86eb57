package console

import (
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Samples is the answer of GET /ui/api/samples.
type Samples struct {
	// IntervalMs is the time between two samples.
	IntervalMs int64 `json:"interval_ms"`
	// Jobs are the jobs the registry has series of, sorted.
	Jobs []string `json:"jobs"`
	// Sources are the sources this node has series of: those it read
	// records from (joinery_records_in_total) and those with a lease
	// (joinery_source_reading).
	Sources []Source `json:"sources"`
	// ClusterMembers is joinery_cluster_members at the last sample (alive
	// members this node sees), -1 before it is set.
	ClusterMembers float64 `json:"cluster_members"`
	// Error is the last gather error, empty when it succeeded.
	Error string `json:"error,omitempty"`
	// Samples are the ring's samples, oldest first.
	Samples []Sample `json:"samples"`
}

// Source is one source of a job on this node.
type Source struct {
	Job    string `json:"job"`
	Source string `json:"source"`
	// Lease is set for a source one node reads at a time (a Redis stream
	// with a lease); Reading then says whether this node holds it. A source
	// without a lease is read by every node it runs on: Reading is true.
	Lease   bool `json:"lease"`
	Reading bool `json:"reading"`
}

// Sample is what happened on the node during one interval, ending at T.
type Sample struct {
	// T is the sample's time, Unix milliseconds.
	T int64 `json:"t"`
	// Jobs holds each job's rates and gauges.
	Jobs map[string]JobSample `json:"jobs"`
	// SnapshotWritesPerSec is the rate of snapshot batch writes to the store.
	SnapshotWritesPerSec float64 `json:"snapshot_writes_per_sec"`
	// SnapshotP50Ms and SnapshotP99Ms are quantiles of the snapshot batch
	// write latency during the interval (joinery_snapshot_seconds); nil when
	// nothing was written.
	SnapshotP50Ms *float64 `json:"snapshot_p50_ms"`
	SnapshotP99Ms *float64 `json:"snapshot_p99_ms"`
	// RedisErrorsPerSec is the rate of failed Redis calls.
	RedisErrorsPerSec float64 `json:"redis_errors_per_sec"`
}

// JobSample is one job's share of a Sample.
type JobSample struct {
	InPerSec       float64 `json:"in_per_sec"`
	OutPerSec      float64 `json:"out_per_sec"`
	RejectedPerSec float64 `json:"rejected_per_sec"`
	LatePerSec     float64 `json:"late_per_sec"`
	FencedPerSec   float64 `json:"fenced_per_sec"`
	KeysActive     float64 `json:"keys_active"`
	StateBytes     float64 `json:"state_bytes"`
	// WatermarkLagSec is the largest joinery_watermark_lag_seconds of the
	// job's partitions; nil for a job without watermarks.
	WatermarkLagSec *float64 `json:"watermark_lag_sec"`
}

// The metric names the sampler reads (admin.Metrics).
const (
	mRecordsIn    = "joinery_records_in_total"
	mOutputs      = "joinery_outputs_total"
	mRejected     = "joinery_rejected_total"
	mLate         = "joinery_late_total"
	mFenced       = "joinery_fenced_writes_total"
	mKeysActive   = "joinery_keys_active"
	mStateBytes   = "joinery_state_bytes"
	mWmLag        = "joinery_watermark_lag_seconds"
	mReading      = "joinery_source_reading"
	mSnapshot     = "joinery_snapshot_seconds"
	mRedisErrors  = "joinery_redis_errors_total"
	mClusterAlive = "joinery_cluster_members"
)

// reading is one gather of the registry, reduced to what samples need.
type reading struct {
	at       time.Time
	counters map[string]map[string]float64 // metric -> job -> sum over other labels
	gauges   map[string]map[string]float64 // metric -> job -> sum (max for mWmLag)
	jobs     map[string]bool
	sources  []Source
	members  float64
	snapshot histogram
	redisErr float64
}

// histogram is a cumulative Prometheus histogram.
type histogram struct {
	count   float64
	uppers  []float64 // bucket upper bounds, ascending (no +Inf)
	cumulus []float64 // cumulative counts per bucket
}

type sampler struct {
	g        prometheus.Gatherer
	interval time.Duration

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{} // closed when run returns

	mu struct {
		sync.Mutex
		ring  []Sample // len <= keep; ring[next] is the oldest once full
		next  int
		keep  int
		prev  *reading
		err   string
		state Samples // Jobs, Sources, ClusterMembers of the last reading
	}
}

func newSampler(g prometheus.Gatherer, interval time.Duration, keep int) *sampler {
	s := &sampler{g: g, interval: interval, stop: make(chan struct{}), done: make(chan struct{})}
	s.mu.keep = keep
	s.mu.state.ClusterMembers = -1
	return s
}

func (s *sampler) run() {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.sample(now)
		}
	}
}

func (s *sampler) close() { s.stopOnce.Do(func() { close(s.stop) }) }

// sample gathers the registry and, from the second reading on, appends the
// sample of the interval since the previous one.
func (s *sampler) sample(now time.Time) {
	mfs, err := s.g.Gather()
	rd := read(mfs, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.err = ""
	if err != nil {
		s.mu.err = err.Error() // Gather returns what it could gather with the error
	}
	jobs := make([]string, 0, len(rd.jobs))
	for j := range rd.jobs {
		jobs = append(jobs, j)
	}
	sort.Strings(jobs)
	s.mu.state.Jobs, s.mu.state.Sources, s.mu.state.ClusterMembers = jobs, rd.sources, rd.members
	if prev := s.mu.prev; prev != nil && now.After(prev.at) {
		s.push(diff(prev, rd))
	}
	s.mu.prev = rd
}

func (s *sampler) push(x Sample) {
	if len(s.mu.ring) < s.mu.keep {
		s.mu.ring = append(s.mu.ring, x)
		return
	}
	s.mu.ring[s.mu.next] = x
	s.mu.next = (s.mu.next + 1) % s.mu.keep
}

func (s *sampler) samples() Samples {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.mu.state
	out.IntervalMs = s.interval.Milliseconds()
	out.Error = s.mu.err
	out.Jobs = slices.Clone(out.Jobs)
	out.Sources = slices.Clone(out.Sources)
	if out.Jobs == nil {
		out.Jobs = []string{}
	}
	if out.Sources == nil {
		out.Sources = []Source{}
	}
	out.Samples = make([]Sample, 0, len(s.mu.ring))
	out.Samples = append(out.Samples, s.mu.ring[s.mu.next:]...)
	out.Samples = append(out.Samples, s.mu.ring[:s.mu.next]...)
	return out
}

// read reduces a gather to the series samples use.
func read(mfs []*dto.MetricFamily, now time.Time) *reading {
	rd := &reading{at: now, counters: map[string]map[string]float64{}, gauges: map[string]map[string]float64{},
		jobs: map[string]bool{}, members: -1}
	add := func(into map[string]map[string]float64, name, job string, v float64, keepMax bool) {
		if into[name] == nil {
			into[name] = map[string]float64{}
		}
		if old, ok := into[name][job]; ok && keepMax {
			into[name][job] = math.Max(old, v)
		} else if ok {
			into[name][job] = old + v
		} else {
			into[name][job] = v
		}
	}
	seen, leased := map[Source]bool{}, map[Source]bool{}
	for _, mf := range mfs {
		name := mf.GetName()
		for _, m := range mf.GetMetric() {
			job := label(m, "job")
			if job != "" {
				rd.jobs[job] = true
			}
			switch name {
			case mRecordsIn, mOutputs, mRejected, mLate, mFenced:
				add(rd.counters, name, job, m.GetCounter().GetValue(), false)
				if name == mRecordsIn {
					seen[Source{Job: job, Source: label(m, "source")}] = true
				}
			case mKeysActive, mStateBytes:
				add(rd.gauges, name, job, m.GetGauge().GetValue(), false)
			case mWmLag:
				add(rd.gauges, name, job, m.GetGauge().GetValue(), true)
			case mReading:
				leased[Source{Job: job, Source: label(m, "source")}] = m.GetGauge().GetValue() == 1
			case mClusterAlive:
				rd.members = m.GetGauge().GetValue()
			case mRedisErrors:
				rd.redisErr += m.GetCounter().GetValue()
			case mSnapshot:
				rd.snapshot = histogramOf(m.GetHistogram())
			}
		}
	}
	for src, reading := range leased {
		rd.sources = append(rd.sources, Source{Job: src.Job, Source: src.Source, Lease: true, Reading: reading})
	}
	for src := range seen {
		if _, ok := leased[src]; !ok {
			rd.sources = append(rd.sources, Source{Job: src.Job, Source: src.Source, Reading: true})
		}
	}
	sort.Slice(rd.sources, func(i, j int) bool {
		a, b := rd.sources[i], rd.sources[j]
		return a.Job < b.Job || a.Job == b.Job && a.Source < b.Source
	})
	return rd
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func histogramOf(h *dto.Histogram) histogram {
	out := histogram{count: float64(h.GetSampleCount())}
	for _, b := range h.GetBucket() {
		if math.IsInf(b.GetUpperBound(), +1) {
			continue
		}
		out.uppers = append(out.uppers, b.GetUpperBound())
		out.cumulus = append(out.cumulus, float64(b.GetCumulativeCount()))
	}
	return out
}

// rate is the per-second increase of a counter from a to b over dt; a
// counter that went down was reset (or its series deleted and made again),
// so all of b counts.
func rate(a, b float64, dt time.Duration) float64 {
	inc := b - a
	if inc < 0 {
		inc = b
	}
	return inc / dt.Seconds()
}

// diff is the sample of the interval from a to b.
func diff(a, b *reading) Sample {
	dt := b.at.Sub(a.at)
	x := Sample{T: b.at.UnixMilli(), Jobs: map[string]JobSample{}}
	ctr := func(name, job string) float64 { return rate(a.counters[name][job], b.counters[name][job], dt) }
	for job := range b.jobs {
		js := JobSample{
			InPerSec:       ctr(mRecordsIn, job),
			OutPerSec:      ctr(mOutputs, job),
			RejectedPerSec: ctr(mRejected, job),
			LatePerSec:     ctr(mLate, job),
			FencedPerSec:   ctr(mFenced, job),
			KeysActive:     b.gauges[mKeysActive][job],
			StateBytes:     b.gauges[mStateBytes][job],
		}
		if v, ok := b.gauges[mWmLag][job]; ok {
			js.WatermarkLagSec = &v
		}
		x.Jobs[job] = js
	}
	x.RedisErrorsPerSec = rate(a.redisErr, b.redisErr, dt)
	d := b.snapshot.minus(a.snapshot)
	x.SnapshotWritesPerSec = d.count / dt.Seconds()
	if p, ok := d.quantile(0.5); ok {
		ms := p * 1000
		x.SnapshotP50Ms = &ms
	}
	if p, ok := d.quantile(0.99); ok {
		ms := p * 1000
		x.SnapshotP99Ms = &ms
	}
	return x
}

// minus is the histogram of the observations b (the receiver) has and a has
// not. When the buckets differ or counts went down (a reset), it is b.
func (b histogram) minus(a histogram) histogram {
	if !slices.Equal(a.uppers, b.uppers) || b.count < a.count {
		return b
	}
	out := histogram{count: b.count - a.count, uppers: b.uppers, cumulus: make([]float64, len(b.cumulus))}
	for i := range b.cumulus {
		out.cumulus[i] = b.cumulus[i] - a.cumulus[i]
	}
	return out
}

// quantile estimates the q-quantile the way Prometheus' histogram_quantile
// does: linear interpolation inside the bucket holding the rank, the first
// bucket starting at 0, and the largest finite bound for ranks in the +Inf
// bucket. ok is false without observations.
func (h histogram) quantile(q float64) (float64, bool) {
	if h.count <= 0 || len(h.uppers) == 0 {
		return 0, false
	}
	rank := q * h.count
	lower, below := 0.0, 0.0
	for i, up := range h.uppers {
		if h.cumulus[i] >= rank {
			in := h.cumulus[i] - below
			if in <= 0 {
				return up, true
			}
			return lower + (up-lower)*(rank-below)/in, true
		}
		lower, below = up, h.cumulus[i]
	}
	return h.uppers[len(h.uppers)-1], true
}
