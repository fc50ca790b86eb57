package fleetbench

import (
	"bytes"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/joinery/joinery/job"
)

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name, line string
		want       float64
		err        bool
	}{
		{"plain", "1234 (joinery) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0 100 0 0", 3.25, false},
		{"name with spaces and parens", "77 (a (b) c) R 1 77 77 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 1 0 0", 0.03, false},
		{"no name", "1234 joinery S 1", 0, true},
		{"too short", "1 (x) S 1 2 3", 0, true},
		{"not a number", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 abc 2 0", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProcStat([]byte(tc.line))
			if tc.err {
				if !errors.Is(err, ErrProcStat) {
					t.Fatalf("err = %v, want ErrProcStat", err)
				}
				return
			}
			if err != nil || math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("= %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestProcCPUSelf reads this test process's own /proc entry, which must
// parse and grow as the process burns CPU.
func TestProcCPUSelf(t *testing.T) {
	a, err := ProcCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for b := a; b < a+0.05; {
		for i := range 1_000_000 {
			x += i
		}
		if b, err = ProcCPU(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	_ = x
}

func TestSumCounter(t *testing.T) {
	text := `# HELP joinery_records_in_total Records read from sources.
# TYPE joinery_records_in_total counter
joinery_records_in_total{job="fleet",source="domains"} 1500
joinery_records_in_total{job="fleet",source="users"} 2.5e3
joinery_records_in_total_created{job="fleet"} 1.7e9
joinery_records_in_totalx 99
joinery_records_out_total{job="fleet"} 7
`
	tests := []struct {
		name, metric string
		want         float64
		found        bool
	}{
		{"sums label sets", "joinery_records_in_total", 4000, true},
		{"other metric", "joinery_records_out_total", 7, true},
		{"absent", "joinery_nothing_total", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, found, err := SumCounter([]byte(text), tc.metric)
			if err != nil || got != tc.want || found != tc.found {
				t.Fatalf("= %v, %v, %v; want %v, %v", got, found, err, tc.want, tc.found)
			}
		})
	}
	// A repartitioned run counts the repartition streams' readers alone.
	repart := text + `joinery_records_in_total{job="fleet",source="users:repart"} 30
joinery_records_in_total{job="fleet",source="domains:repart"} 12
`
	if got, found, err := SumCounterWhere([]byte(repart), "joinery_records_in_total", func(l string) bool { return strings.Contains(l, repartLabel) }); got != 42 || !found || err != nil {
		t.Errorf("the :repart sources sum to %v, %v, %v; want 42", got, found, err)
	}
	if _, _, err := SumCounter([]byte("m{a=\"b\" 1\n"), "m"); err == nil {
		t.Fatal("unclosed label set: no error")
	}
	if _, _, err := SumCounter([]byte("m{a=\"b\"} x\n"), "m"); err == nil {
		t.Fatal("bad value: no error")
	}
}

func TestEfficiency(t *testing.T) {
	tests := []struct {
		n           int
		tput, tput1 float64
		want        float64
	}{
		{1, 1000, 1000, 1},
		{2, 2000, 1000, 1},
		{4, 2000, 1000, 0.5},
		{3, 3600, 1000, 1.2},
		{2, 1000, 0, math.NaN()},
	}
	for _, tc := range tests {
		got := Efficiency(tc.n, tc.tput, tc.tput1)
		if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-12) {
			t.Errorf("Efficiency(%d, %v, %v) = %v, want %v", tc.n, tc.tput, tc.tput1, got, tc.want)
		}
	}
}

func TestSetEfficiency(t *testing.T) {
	rs := []Result{
		{Workload: "cdc", Nodes: 1, EventsPerSec: 100, CPUPerEventUs: 50},
		{Workload: "cdc", Nodes: 2, EventsPerSec: 150, CPUPerEventUs: 100},
		{Workload: "q20", Nodes: 2, EventsPerSec: 150},
		// Another source's series has its own 1-node result.
		{Source: SourceRedisStreams, Workload: "cdc", Nodes: 1, EventsPerSec: 200, CPUPerEventUs: 40},
		{Source: SourceRedisStreams, Workload: "cdc", Nodes: 2, EventsPerSec: 300, CPUPerEventUs: 80},
	}
	SetEfficiency(rs)
	if rs[0].Efficiency != 1 || rs[1].Efficiency != 0.75 || !math.IsNaN(rs[2].Efficiency) || rs[4].Efficiency != 0.75 {
		t.Fatalf("efficiencies %v %v %v %v, want 1 0.75 NaN 0.75", rs[0].Efficiency, rs[1].Efficiency, rs[2].Efficiency, rs[4].Efficiency)
	}
	if rs[4].CPUEfficiency != 0.5 {
		t.Fatalf("CPU efficiency of redis-streams on 2 nodes %v, want 0.5", rs[4].CPUEfficiency)
	}
	if rs[0].CPUEfficiency != 1 || rs[1].CPUEfficiency != 0.5 || !math.IsNaN(rs[2].CPUEfficiency) {
		t.Fatalf("CPU efficiencies %v %v %v, want 1 0.5 NaN", rs[0].CPUEfficiency, rs[1].CPUEfficiency, rs[2].CPUEfficiency)
	}
	// NaN has no JSON form: it is written as -1.
	b, err := rs[2].MarshalJSON()
	if err != nil || !bytes.Contains(b, []byte(`"efficiency":-1`)) {
		t.Fatalf("JSON %s, %v: want efficiency -1", b, err)
	}
	var sb strings.Builder
	if err := WriteTable(&sb, rs); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(sb.String(), "\n"); lines != 6 {
		t.Fatalf("table has %d lines, want 6:\n%s", lines, sb.String())
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	tests := []struct{ q, want float64 }{{0.5, 5}, {0.99, 10}, {0.9, 9}, {0, 1}, {1, 10}, {0.1, 1}, {0.11, 2}}
	for _, tc := range tests {
		if got := Percentile(xs, tc.q); got != tc.want {
			t.Errorf("Percentile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if xs[0] != 5 {
		t.Error("Percentile sorted its input")
	}
	if !math.IsNaN(Percentile(nil, 0.5)) {
		t.Error("Percentile of nothing is not NaN")
	}
}

func TestRate(t *testing.T) {
	if got := Rate(100, 400, 2, 5); got != 100 {
		t.Errorf("Rate = %v, want 100", got)
	}
	if !math.IsNaN(Rate(0, 1, 3, 3)) {
		t.Error("Rate over no time is not NaN")
	}
}

func TestMakeCgroupErrors(t *testing.T) {
	// A directory without the cpu controller's files is refused, saying so.
	if _, err := MakeCgroup(t.TempDir(), "joinery-bench", "x", 0.3, 0); !errors.Is(err, ErrNoCgroup) {
		t.Fatalf("err = %v, want ErrNoCgroup", err)
	}
	root := t.TempDir()
	if err := os.WriteFile(root+"/cpu.cfs_quota_us", []byte("-1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := MakeCgroup(root, "joinery-bench", "x", 0.001, 0); !errors.Is(err, ErrNoCgroup) {
		t.Fatalf("quota below 1 ms: err = %v, want ErrNoCgroup", err)
	}
	// On a plain directory tree the files are written as the kernel's would be.
	for _, tc := range []struct {
		period                int
		wantPeriod, wantQuota string
	}{{0, "100000", "30000"}, {10000, "10000", "3000"}} {
		cg, err := MakeCgroup(root, "joinery-bench", "node1", 0.3, tc.period)
		if err != nil {
			t.Fatal(err)
		}
		for file, want := range map[string]string{"cpu.cfs_period_us": tc.wantPeriod, "cpu.cfs_quota_us": tc.wantQuota} {
			b, err := os.ReadFile(cg.Path + "/" + file)
			if err != nil || string(b) != want {
				t.Errorf("period %d: %s = %q, %v; want %q", tc.period, file, b, err, want)
			}
		}
	}
}

// TestNodeConfig checks a node's job file for either source kind: the
// node's own parser and validation accept it, and it names the run's
// topics, shard streams, groups, state cluster and ports.
func TestNodeConfig(t *testing.T) {
	w := cdcWorkload(Config{Users: 10, Domains: 10, Changes: 10})
	for _, tc := range []struct {
		source, srcs string
		want         []string
	}{
		{SourceKafka, kafkaSources(w, 3, "127.0.0.1:9092"), []string{
			`type: kafka, side: left, kafka: {brokers: ["127.0.0.1:9092"], topic: users-3, group: fleet-3-users`,
			`type: kafka, side: right, kafka: {brokers: ["127.0.0.1:9092"], topic: domains-3, group: fleet-3-domains`,
		}},
		{SourceRedisStreams, streamsSources(w, 3, "127.0.0.1:6390", 12, SourceRedisStreams), []string{
			`{name: users, type: redis-stream, side: left, redis: {addr: "127.0.0.1:6390"}, stream: users-3, shards: 12, group: fleet-3-users}`,
			`{name: domains, type: redis-stream, side: right, redis: {addr: "127.0.0.1:6390"}, stream: domains-3, shards: 12, group: fleet-3-domains}`,
		}},
		{SourceRepartitioned, streamsSources(w, 3, "127.0.0.1:6390", 12, SourceRepartitioned), []string{
			`{name: users, type: redis-stream, side: left, redis: {addr: "127.0.0.1:6390"}, stream: users-3, shards: 12, repartition: stream, group: fleet-3-users}`,
			`{name: domains, type: redis-stream, side: right, redis: {addr: "127.0.0.1:6390"}, stream: domains-3, shards: 12, repartition: stream, group: fleet-3-domains}`,
		}},
	} {
		t.Run(tc.source, func(t *testing.T) {
			y := nodeConfig(w, 3, 2, tc.srcs, "127.0.0.1:9092", []string{"127.0.0.1:7001", "127.0.0.1:7002"}, 5000, 4000, 6000, 3)
			spec, err := job.Parse([]byte(y))
			if err != nil {
				t.Fatalf("job.Parse: %v\n%s", err, y)
			}
			if spec.Cluster.Expect != 3 {
				t.Errorf("cluster.expect %d, want 3 (the fleet size)", spec.Cluster.Expect)
			}
			if len(spec.Sources) != 2 || len(spec.State.Redis.Cluster.Addrs) != 2 {
				t.Fatalf("parsed %d sources, %d cluster addrs; want 2, 2", len(spec.Sources), len(spec.State.Redis.Cluster.Addrs))
			}
			for _, want := range append(tc.want, `topic: out-3`,
				`cluster: {addrs: ["127.0.0.1:7001","127.0.0.1:7002"]}`, `node_name: n2`, `gossip: "127.0.0.1:5000"`,
				`seeds: ["127.0.0.1:4000"]`, `admin: {addr: "127.0.0.1:6000", pprof: true}`) {
				if !strings.Contains(y, want) {
					t.Errorf("config lacks %q:\n%s", want, y)
				}
			}
		})
	}
}

func TestMaxShare(t *testing.T) {
	for _, tc := range []struct {
		in   []int64
		want string
	}{{nil, "-"}, {[]int64{0, 0}, "-"}, {[]int64{1, 1, 2}, "50%"}, {[]int64{10, 10, 10}, "33%"}} {
		if got := maxShare(tc.in); got != tc.want {
			t.Errorf("maxShare(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
