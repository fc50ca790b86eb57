package bench

import (
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type sample struct {
	res  RunResult
	cpu  time.Duration
	wall time.Duration
	rss  float64
	heap uint64
	live int
	// mallocs is the heap allocations the process made during the run
	// (runtime.MemStats.Mallocs), allocBytes their bytes (TotalAlloc).
	mallocs, allocBytes uint64
	// redisCPU is redis-server's share of cpu (node+redis).
	redisCPU time.Duration
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS resets the kernel's high-water mark (Linux >= 4.0); peakRSSMB
// reads it, falling back to Getrusage's maxrss (the process's lifetime peak).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func peakRSSMB() float64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return kb / 1024
			}
		}
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) / 1024
}

// measure runs f once, timing its process CPU (plus redis-server's, when
// given), wall time and peak RSS; probe (called by f at the end of input)
// weighs the live heap and is excluded from the timings.
func measure(redis *redisServer, f func(probe func(live int)) (RunResult, error)) (sample, error) {
	var s sample
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	resetPeakRSS()
	var exclCPU, exclWall time.Duration
	probe := func(live int) {
		c0, t0 := cpuNow(), time.Now()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > base {
			s.heap = ms.HeapAlloc - base
		}
		s.live = live
		exclCPU += cpuNow() - c0
		exclWall += time.Since(t0)
	}
	m0, b0 := ms.Mallocs, ms.TotalAlloc
	c0, r0, t0 := cpuNow(), redis.CPU(), time.Now()
	res, err := f(probe)
	var end runtime.MemStats
	runtime.ReadMemStats(&end)
	s.mallocs, s.allocBytes = end.Mallocs-m0, end.TotalAlloc-b0
	s.wall = time.Since(t0) - exclWall
	s.redisCPU = redis.CPU() - r0
	s.cpu = cpuNow() - c0 + s.redisCPU - exclCPU
	s.rss = peakRSSMB()
	s.res = res
	if res.Wall > 0 {
		s.wall = res.Wall
	}
	if res.CPU > 0 {
		s.cpu = res.CPU
	} else {
		s.cpu -= res.Excluded
	}
	s.mallocs -= min(s.mallocs, res.ExcludedMallocs)
	s.allocBytes -= min(s.allocBytes, res.ExcludedBytes)
	return s, err
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func figures(ss []sample, events int, gen time.Duration) Figures {
	var f Figures
	var eps, epsGen, wall, cpu, walls, bpk []float64
	for _, s := range ss {
		c := max(s.cpu.Seconds(), 1e-9)
		eps = append(eps, float64(events)/c)
		epsGen = append(epsGen, float64(events)/(c+gen.Seconds()))
		wall = append(wall, float64(events)/max(s.wall.Seconds(), 1e-9))
		cpu = append(cpu, c)
		walls = append(walls, s.wall.Seconds())
		f.PeakRSSMB = max(f.PeakRSSMB, s.rss)
		if s.live > 0 {
			bpk = append(bpk, float64(s.heap)/float64(s.live))
		}
		f.HeapBytes, f.LiveKeys = s.heap, s.live
	}
	f.EventsPerCPUSec, f.EventsPerCPUSecWithGen, f.EventsPerWallSec = median(eps), median(epsGen), median(wall)
	f.CPUSec, f.WallSec, f.BytesPerLiveKey, f.Samples = median(cpu), median(walls), median(bpk), eps
	return f
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*1000) / 1000
}
