package bench

import "runtime/metrics"

// gcStats is the Go runtime's count of completed collections and its
// estimates of the collector's CPU and of the process's busy CPU (every P's
// time less the idle time), read before and after a latency run: the
// collections a run had are what sets its p99 (docs/performance/2026-12-05-latency.md, "p99 at
// half the rate").
type gcStats struct{ cycles, gcCPU, busyCPU float64 }

var gcSampleNames = []string{"/gc/cycles/total:gc-cycles", "/cpu/classes/gc/total:cpu-seconds", "/cpu/classes/total:cpu-seconds", "/cpu/classes/idle:cpu-seconds"}

func readGCStats() gcStats {
	s := make([]metrics.Sample, len(gcSampleNames))
	for i, n := range gcSampleNames {
		s[i].Name = n
	}
	metrics.Read(s)
	f := func(i int) float64 {
		switch s[i].Value.Kind() {
		case metrics.KindUint64:
			return float64(s[i].Value.Uint64())
		case metrics.KindFloat64:
			return s[i].Value.Float64()
		}
		return 0
	}
	return gcStats{cycles: f(0), gcCPU: f(1), busyCPU: f(2) - f(3)}
}

// setGC fills lat's collections and the collector's share of the busy CPU
// from before to now.
func (lat *Latency) setGC(before gcStats) {
	after := readGCStats()
	lat.GCCycles = int64(after.cycles - before.cycles)
	if busy := after.busyCPU - before.busyCPU; busy > 0 {
		lat.GCShare = (after.gcCPU - before.gcCPU) / busy
	}
}
