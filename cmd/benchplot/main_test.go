package main

import (
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A report as cmd/bench writes it (trimmed to the fields benchplot reads,
// plus some it ignores): one skipped result, one invalid, one whose latency
// run was invalid.
const sample = `{"scale":"tiny","rounds":1,"num_cpu":2,"results":[
 {"workload":"cdc","system":"core","valid":true,"ratio":0.5,"engine":{"events_per_cpu_sec":800,"cpu_sec":1},"baseline":{"events_per_cpu_sec":1600},
  "latency":{"p50_ms":0.5,"p99_ms":4,"max_ms":5}},
 {"workload":"cdc","system":"node","valid":true,"ratio":0.1,"engine":{"events_per_cpu_sec":100},"baseline":{"events_per_cpu_sec":1000},
  "latency":{"p50_ms":1,"p99_ms":9,"max_ms":12,"invalid":"checksum differs"}},
 {"workload":"q8","system":"node","skipped":"reads plain JSON","engine":{}},
 {"workload":"q20","system":"core","valid":false,"invalid":"checksum differs","engine":{"events_per_cpu_sec":900}},
 {"workload":"q20","system":"node","valid":true,"ratio":0.25,"engine":{"events_per_cpu_sec":300},"baseline":{"events_per_cpu_sec":1200}}
]}`

func TestGroups(t *testing.T) {
	rep, err := decode(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  *grouped
		want grouped
	}{
		{"throughput", throughput(rep), grouped{
			categories: []string{"cdc", "q20"}, groups: []string{"core", "node"},
			values: map[string][]float64{"core": {800, 0}, "node": {100, 300}}}},
		{"ratio", ratio(rep), grouped{
			categories: []string{"cdc", "q20"}, groups: []string{"core", "node"},
			values: map[string][]float64{"core": {0.5, 0}, "node": {0.1, 0.25}}}},
		{"latency (valid runs only)", latency(rep), grouped{
			categories: []string{"cdc\ncore"}, groups: []string{"p50", "p99", "max"},
			values: map[string][]float64{"p50": {0.5}, "p99": {4}, "max": {5}}}},
	} {
		if !reflect.DeepEqual(*c.got, c.want) {
			t.Errorf("%s = %+v, want %+v", c.name, *c.got, c.want)
		}
	}
	left := strings.Join(rep.leftOut(), "\n")
	for _, w := range []string{"q8/node skipped", "q20/core invalid", "cdc/node latency run invalid"} {
		if !strings.Contains(left, w) {
			t.Errorf("left out %q: want a line with %q", left, w)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct{ name, in string }{
		{"not JSON", "bench: report"},
		{"truncated", sample[:40]},
		{"nothing valid", `{"results":[{"workload":"q8","system":"node","skipped":"x"}]}`},
		{"no results", `{"scale":"tiny"}`},
	} {
		if _, err := decode(strings.NewReader(c.in)); err == nil {
			t.Errorf("%s: decoded without an error", c.name)
		} else if c.name == "nothing valid" && !errors.Is(err, errNoResults) {
			t.Errorf("%s: %v, want errNoResults", c.name, err)
		}
	}
}

func TestDraw(t *testing.T) {
	rep, err := decode(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := draw(rep, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bench-throughput.png", "bench-ratio.png", "bench-latency.png"}
	if len(files) != len(want) {
		t.Fatalf("wrote %v, want %v", files, want)
	}
	for i, f := range files {
		if filepath.Base(f) != want[i] {
			t.Errorf("file %d = %s, want %s", i, f, want[i])
		}
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(r)
		r.Close()
		if err != nil || cfg.Width < 600 || cfg.Height < 300 {
			t.Errorf("%s: %+v, %v; want a PNG of at least 600×300", f, cfg, err)
		}
	}
}
