package gctune

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"1024", 1024, false},
		{"512MiB", 512 << 20, false},
		{"2GiB", 2 << 30, false},
		{"1.5G", 3 << 29, false},
		{"3 GB", 3e9, false},
		{"10B", 10, false},
		{"", 0, true},
		{"-1GiB", 0, true},
		{"lots", 0, true},
		{"1e30TiB", 0, true},
	} {
		got, err := ParseBytes(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, error %v", c.in, got, err, c.want, c.bad)
		}
	}
}

func TestParseLimit(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"max\n", 0, false},
		{"9223372036854771712\n", 0, false}, // cgroup v1 "unlimited"
		{"2147483648\n", 2 << 30, true},
		{"0", 0, false},
	} {
		got, ok := parseLimit(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("parseLimit(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseMemTotal(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"MemTotal:       24567892 kB\nMemFree: 1 kB\n", 24567892 << 10, true},
		{"MemFree: 1 kB\n", 0, false},
		{"MemTotal: lots kB\n", 0, false},
	} {
		got, ok := parseMemTotal(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("parseMemTotal(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestApply(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	s := Apply(0, 1<<30)
	if s.Percent != DefaultPercent || s.PercentFrom != "default" || s.Limit != 1<<30 || s.LimitFrom != "job" {
		t.Fatalf("Apply(0, 1GiB) = %+v", s)
	}
	if got := debug.SetGCPercent(-1); got != DefaultPercent {
		t.Errorf("GC percent in force %d, want %d", got, DefaultPercent)
	}
	debug.SetGCPercent(DefaultPercent)
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("memory limit in force %d, want 1GiB", got)
	}
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "3GiB")
	debug.SetGCPercent(150) // what the runtime read from GOGC at start
	debug.SetMemoryLimit(3 << 30)
	s = Apply(800, 1<<20)
	if s.Percent != 150 || s.PercentFrom != "GOGC" || s.Limit != 3<<30 || s.LimitFrom != "GOMEMLIMIT" {
		t.Errorf("with GOGC and GOMEMLIMIT set, Apply = %+v; the environment must win", s)
	}
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	s = Apply(250, 0)
	if s.Percent != 250 || (s.LimitFrom != "cgroup" && s.LimitFrom != "machine" && s.LimitFrom != "none") || (s.LimitFrom == "none" && s.Limit != math.MaxInt64) {
		t.Errorf("Apply(250, 0) = %+v", s)
	}
}

// TestCgroupLimitOwnCgroup: the limit is read from the process's own
// cgroup (and those above it; the smallest wins), v1 and v2, not only from
// the root — a node in a sub-cgroup outside a container got no limit.
func TestCgroupLimitOwnCgroup(t *testing.T) {
	write := func(root, path, v string) {
		t.Helper()
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v1 := t.TempDir()
	write(v1, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712") // root: no limit
	write(v1, "sys/fs/cgroup/memory/joinery/n1/memory.limit_in_bytes", "1073741824")
	v2 := t.TempDir()
	write(v2, "sys/fs/cgroup/memory.max", "max")
	write(v2, "sys/fs/cgroup/pods/memory.max", "2147483648")
	write(v2, "sys/fs/cgroup/pods/n1/memory.max", "max")
	for _, c := range []struct {
		name, root, self string
		want             int64
		ok               bool
	}{
		{"v1 own cgroup", v1, "12:memory:/joinery/n1\n3:cpu,cpuacct:/x\n", 1 << 30, true},
		{"v1 combined controllers", v1, "5:memory,hugetlb:/joinery/n1\n", 1 << 30, true},
		{"v1 root only", v1, "12:memory:/\n", 0, false},
		{"v2 limit on a parent", v2, "0::/pods/n1\n", 2 << 30, true},
		{"v2 none", v2, "0::/\n", 0, false},
		{"no cgroup file", v2, "", 0, false},
	} {
		got, ok := cgroupLimitAt(c.root, c.self)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: got %d %v, want %d %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
