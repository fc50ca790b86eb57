// Package gctune owns the Go garbage collector settings of a joinery
// process: a node keeps much short-lived garbage per event (decoded rows,
// requests, outputs) over a live heap of key state, and Go's default
// (GOGC=100: collect whenever the heap doubles) spends a third of a node's
// CPU in the collector (docs/performance.md). The node therefore runs with
// a larger GC percent and, so that the larger percent cannot run the
// process out of memory, a soft memory limit below the container's.
//
// GOGC and GOMEMLIMIT in the environment win over both, as they do for any
// Go program. Nothing here is per-node: the settings are process-wide, so
// the binary applies them once (cmd/node), not node.Start.
package gctune

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// DefaultPercent is the GC percent a node runs with unless told otherwise:
// the heap may grow to 5× the live heap between collections (bounded by
// the memory limit), which measured 1.3–1.4× the events per CPU-second of
// GOGC=100 on the cdc and q20 node benchmarks.
const DefaultPercent = 400

// LimitShare is the share of the container's memory limit (cgroup
// memory.max) or, outside a limited container, of the machine's memory,
// used as the soft memory limit when none is configured.
const LimitShare = 0.8

// Settings are the outcome of Apply, for the start-up log.
type Settings struct {
	Percent     int    // the GC percent in force
	Limit       int64  // the soft memory limit in force (math.MaxInt64: none)
	PercentFrom string // "GOGC", "job" or "default"
	LimitFrom   string // "GOMEMLIMIT", "job", "cgroup", "machine" or "none"
}

// Apply sets the GC percent (percent <= 0: DefaultPercent) and the soft
// memory limit (limitBytes <= 0: LimitShare of the cgroup's limit, if the
// process has one), except where GOGC or GOMEMLIMIT are set.
func Apply(percent int, limitBytes int64) Settings {
	s := Settings{Percent: percent, PercentFrom: "job", Limit: limitBytes, LimitFrom: "job"}
	if os.Getenv("GOGC") != "" {
		s.Percent, s.PercentFrom = debug.SetGCPercent(-1), "GOGC"
		debug.SetGCPercent(s.Percent)
	} else {
		if s.Percent <= 0 {
			s.Percent, s.PercentFrom = DefaultPercent, "default"
		}
		debug.SetGCPercent(s.Percent)
	}
	switch {
	case os.Getenv("GOMEMLIMIT") != "":
		s.Limit, s.LimitFrom = debug.SetMemoryLimit(-1), "GOMEMLIMIT"
	case s.Limit > 0:
		debug.SetMemoryLimit(s.Limit)
	default:
		if c, ok := cgroupLimit(); ok {
			s.Limit, s.LimitFrom = int64(float64(c)*LimitShare), "cgroup"
			debug.SetMemoryLimit(s.Limit)
		} else if m, ok := machineMemory(); ok {
			s.Limit, s.LimitFrom = int64(float64(m)*LimitShare), "machine"
			debug.SetMemoryLimit(s.Limit)
		} else {
			s.Limit, s.LimitFrom = math.MaxInt64, "none"
		}
	}
	return s
}

// cgroupLimit reads the memory limit of this process's own cgroup (the
// path in /proc/self/cgroup, v2 then v1) and of every cgroup above it, and
// returns the smallest: a node started in a sub-cgroup outside a container
// has its limit there, not at the root.
func cgroupLimit() (int64, bool) { return cgroupLimitAt("/", readSelfCgroup()) }

// ContainerLimit is the memory limit of this process's cgroup (v2 or v1,
// the smallest of it and its ancestors'), false when it has none: the
// limit Apply takes LimitShare of.
func ContainerLimit() (int64, bool) { return cgroupLimit() }

func readSelfCgroup() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	return string(b)
}

// cgroupLimitAt is cgroupLimit with the file system rooted at root and the
// text of /proc/self/cgroup given.
func cgroupLimitAt(root, selfCgroup string) (int64, bool) {
	var v2, v1 string
	for _, line := range strings.Split(selfCgroup, "\n") {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2 = f[2]
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			v1 = f[2]
		}
	}
	best, found := int64(0), false
	consider := func(path string) {
		if b, err := os.ReadFile(filepath.Join(root, path)); err == nil {
			if v, ok := parseLimit(string(b)); ok && (!found || v < best) {
				best, found = v, true
			}
		}
	}
	walk := func(base, rel, file string) {
		for dir := filepath.Clean("/" + rel); ; dir = filepath.Dir(dir) {
			consider(filepath.Join(base, dir, file))
			if dir == "/" {
				return
			}
		}
	}
	walk("/sys/fs/cgroup", v2, "memory.max")
	walk("/sys/fs/cgroup/memory", v1, "memory.limit_in_bytes")
	return best, found
}

// BudgetShare is the share of the soft memory limit that a node's live key
// actors may take (the rest: in-flight batches, sinks, the GC's headroom).
const BudgetShare = 0.35

// MemoryBudget is the memory a node's live key actors may take: override
// when positive, else BudgetShare of the soft memory limit in force (as
// Apply set it, or GOMEMLIMIT), else of LimitShare of the process's cgroup
// limit or of the machine's memory. from says which.
func MemoryBudget(override int64) (budget int64, from string) {
	if override > 0 {
		return override, "job"
	}
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		return int64(float64(l) * BudgetShare), "memory limit"
	}
	if c, ok := cgroupLimit(); ok {
		return int64(float64(c) * LimitShare * BudgetShare), "cgroup"
	}
	if m, ok := machineMemory(); ok {
		return int64(float64(m) * LimitShare * BudgetShare), "machine"
	}
	return 0, "none"
}

// machineMemory reads MemTotal from /proc/meminfo.
func machineMemory() (int64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	return parseMemTotal(string(b))
}

// parseMemTotal finds "MemTotal: N kB" in a /proc/meminfo text.
func parseMemTotal(s string) (int64, bool) {
	for _, line := range strings.Split(s, "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if v, err := strconv.ParseInt(f[0], 10, 64); err == nil && v > 0 {
					return v << 10, true
				}
			}
		}
	}
	return 0, false
}

// parseLimit parses a cgroup memory limit file: "max" (v2) and the huge
// values v1 uses for "no limit" mean none.
func parseLimit(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || v >= 1<<60 {
		return 0, false
	}
	return v, true
}

// ParseBytes parses a size such as "512MiB", "2GiB", "1.5G" or a plain
// number of bytes.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1}}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || f*mult > math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a size (e.g. 512MiB, 2GiB, 1073741824)", s)
	}
	return int64(f * mult), nil
}
