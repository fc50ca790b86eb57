package fleetbench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// ClockTicks is the kernel's USER_HZ, the unit of utime and stime in
// /proc/<pid>/stat: 100 on every Linux architecture Go supports.
const ClockTicks = 100

// ErrProcStat is returned for a /proc/<pid>/stat line that cannot be parsed.
var ErrProcStat = errors.New("fleetbench: malformed /proc/<pid>/stat")

// ParseProcStat returns the user+system CPU seconds of a process (all its
// threads) from the contents of /proc/<pid>/stat. The command name (field
// 2) is in parentheses and may hold spaces or parentheses itself, so fields
// are counted from the last ')'.
func ParseProcStat(b []byte) (float64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: no ')'", ErrProcStat)
	}
	f := strings.Fields(string(b[i+1:]))
	// After the name: state(3) ppid(4) … utime(14) stime(15): indices 11, 12.
	if len(f) < 13 {
		return 0, fmt.Errorf("%w: %d fields after the name, want >= 13", ErrProcStat, len(f))
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("%w: utime/stime: %w", ErrProcStat, err)
	}
	return float64(ut+st) / ClockTicks, nil
}

// ProcCPU reads ParseProcStat of a running process.
func ProcCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu of pid %d: %w", pid, err)
	}
	return ParseProcStat(b)
}

// SumCounter sums every sample of the counter metric name (all label sets)
// in a Prometheus text exposition; found reports whether any sample was.
func SumCounter(text []byte, name string) (sum float64, found bool, err error) {
	return SumCounterWhere(text, name, nil)
}

// SumCounterWhere is SumCounter of the samples whose label set (the text
// between the braces, "" for none) keep accepts; keep nil accepts all.
func SumCounterWhere(text []byte, name string, keep func(labels string) bool) (sum float64, found bool, err error) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue // another metric with name as a prefix
		}
		labels := ""
		if rest[0] == '{' {
			j := strings.LastIndexByte(rest, '}')
			if j < 0 {
				return 0, false, fmt.Errorf("metric line %q: no closing brace", line)
			}
			labels, rest = rest[1:j], rest[j+1:]
		}
		if keep != nil && !keep(labels) {
			continue
		}
		fs := strings.Fields(rest)
		if len(fs) == 0 {
			return 0, false, fmt.Errorf("metric line %q: no value", line)
		}
		v, err := strconv.ParseFloat(fs[0], 64)
		if err != nil {
			return 0, false, fmt.Errorf("metric line %q: %w", line, err)
		}
		sum += v
		found = true
	}
	return sum, found, sc.Err()
}

// Efficiency is the scaling efficiency of n nodes: throughput(n) / (n ×
// throughput(1)); 1 is linear scaling. It is NaN without a 1-node figure.
func Efficiency(n int, tput, tput1 float64) float64 {
	if n <= 0 || tput1 <= 0 {
		return math.NaN()
	}
	return tput / (float64(n) * tput1)
}

// Percentile returns the q-quantile (0..1) of xs by the nearest-rank method
// (the smallest value with at least q of the sample at or below it); NaN
// for an empty sample. xs is not modified.
func Percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(q * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// Rate is the per-second rate of a counter between two readings; NaN when
// no time passed.
func Rate(c0, c1, t0, t1 float64) float64 {
	if t1 <= t0 {
		return math.NaN()
	}
	return (c1 - c0) / (t1 - t0)
}
