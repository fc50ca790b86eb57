// Command benchplot draws the JSON report cmd/bench writes as PNG charts: the
// throughput of every workload on every system (engine events per
// CPU-second), the same as a ratio to the raw Go baseline measured next to
// it over the same input, and the latency percentiles (p50, p99, max) of the
// open-loop runs.
//
//	go run ./cmd/bench -scale small -out /tmp/bench.json
//	go run ./cmd/benchplot -in /tmp/bench.json -out /tmp/joinery-bench    # /tmp/joinery-bench/bench-{throughput,ratio,latency}.png
//
// `make bench` runs both. Results that were skipped or whose checksum
// disagreed with the baseline's are left out of the charts (and listed on
// stderr): a chart shows only figures that count.
//
// benchplot reads the report by its JSON field names (the report's format
// is the contract, not the bench package's Go types) and draws with
// gonum.org/v1/plot, picked because it is pure Go (no cgo, no system
// libraries, its own fonts) and renders PNG itself; it is only linked into
// this command.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

func main() {
	in := flag.String("in", "/tmp/joinery-bench/bench-results.json", "the JSON report of cmd/bench (-out there)")
	out := flag.String("out", "/tmp/joinery-bench", "directory to write bench-throughput.png, bench-ratio.png and bench-latency.png to")
	flag.Parse()
	f, err := os.Open(*in)
	if err != nil {
		fail(err)
	}
	rep, err := decode(f)
	f.Close()
	if err != nil {
		fail(fmt.Errorf("%s: %w", *in, err))
	}
	for _, s := range rep.leftOut() {
		fmt.Fprintln(os.Stderr, "benchplot: left out:", s)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail(err)
	}
	files, err := draw(rep, *out)
	for _, p := range files {
		fmt.Fprintln(os.Stderr, "benchplot: wrote", p)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchplot:", err)
	os.Exit(1)
}

// report is the part of cmd/bench's JSON report the charts use.
type report struct {
	Scale   string   `json:"scale"`
	Rounds  int      `json:"rounds"`
	NumCPU  int      `json:"num_cpu"`
	Results []result `json:"results"`
}

type result struct {
	Workload string  `json:"workload"`
	System   string  `json:"system"`
	Valid    bool    `json:"valid"`
	Ratio    float64 `json:"ratio"`
	Invalid  string  `json:"invalid"`
	Skipped  string  `json:"skipped"`
	Engine   figures `json:"engine"`
	Baseline figures `json:"baseline"`
	Latency  *struct {
		P50Ms   float64 `json:"p50_ms"`
		P99Ms   float64 `json:"p99_ms"`
		MaxMs   float64 `json:"max_ms"`
		Invalid string  `json:"invalid"`
	} `json:"latency"`
}

type figures struct {
	EventsPerCPUSec float64 `json:"events_per_cpu_sec"`
}

// errNoResults is decode's error for a report without a single result that
// counts.
var errNoResults = errors.New("no valid results in the report (all skipped or invalid)")

func decode(r io.Reader) (report, error) {
	var rep report
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return report{}, fmt.Errorf("decode the bench report: %w", err)
	}
	for _, x := range rep.Results {
		if x.counts() {
			return rep, nil
		}
	}
	return report{}, errNoResults
}

func (x result) counts() bool { return x.Skipped == "" && x.Valid && x.Engine.EventsPerCPUSec > 0 }

func (rep report) leftOut() []string {
	var out []string
	for _, x := range rep.Results {
		switch {
		case x.Skipped != "":
			out = append(out, fmt.Sprintf("%s/%s skipped: %s", x.Workload, x.System, x.Skipped))
		case !x.Valid:
			out = append(out, fmt.Sprintf("%s/%s invalid: %s", x.Workload, x.System, x.Invalid))
		case x.Latency != nil && x.Latency.Invalid != "":
			out = append(out, fmt.Sprintf("%s/%s latency run invalid: %s", x.Workload, x.System, x.Latency.Invalid))
		}
	}
	return out
}

// grouped is the data of a grouped bar chart: one bar per (category,
// group), NaN-free, 0 where a group has no value for a category.
type grouped struct {
	categories []string             // the x axis, in report order
	groups     []string             // the bars in each category, in report order
	values     map[string][]float64 // group -> value per category
}

func newGrouped() *grouped { return &grouped{values: map[string][]float64{}} }

func (g *grouped) set(category, group string, v float64) {
	ci := slices.Index(g.categories, category)
	if ci < 0 {
		g.categories = append(g.categories, category)
		ci = len(g.categories) - 1
		for k := range g.values {
			g.values[k] = append(g.values[k], 0)
		}
	}
	if _, ok := g.values[group]; !ok {
		g.groups = append(g.groups, group)
		g.values[group] = make([]float64, len(g.categories))
	}
	g.values[group][ci] = v
}

// throughput: per workload, each system's engine events per CPU-second.
// (The baselines are not drawn next to them: a system's baseline reads what
// that system reads, e.g. only the rows a pushed-down filter keeps, so they
// differ between systems; ratio shows each engine against its own.)
func throughput(rep report) *grouped {
	g := newGrouped()
	for _, x := range rep.Results {
		if x.counts() {
			g.set(x.Workload, x.System, x.Engine.EventsPerCPUSec)
		}
	}
	return g
}

// ratio: per workload, each system's engine events per CPU-second over its
// baseline's.
func ratio(rep report) *grouped {
	g := newGrouped()
	for _, x := range rep.Results {
		if x.counts() && x.Ratio > 0 {
			g.set(x.Workload, x.System, x.Ratio)
		}
	}
	return g
}

// latency: per workload/system with a valid open-loop run, p50, p99 and max.
func latency(rep report) *grouped {
	g := newGrouped()
	for _, x := range rep.Results {
		if !x.counts() || x.Latency == nil || x.Latency.Invalid != "" {
			continue
		}
		c := x.Workload + "\n" + x.System
		g.set(c, "p50", x.Latency.P50Ms)
		g.set(c, "p99", x.Latency.P99Ms)
		g.set(c, "max", x.Latency.MaxMs)
	}
	return g
}

// niceTicks labels about five round steps (1, 2 or 5 × 10^k) from 0.
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return nil
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 6, 64)})
	}
	return ts
}

var palette = []color.Color{
	color.RGBA{0x2f, 0x6f, 0xde, 0xff}, color.RGBA{0xd9, 0x82, 0x2b, 0xff}, color.RGBA{0x1f, 0x8a, 0x4c, 0xff},
	color.RGBA{0x8e, 0x44, 0xad, 0xff}, color.RGBA{0xc2, 0x30, 0x30, 0xff}, color.RGBA{0x6b, 0x73, 0x85, 0xff},
	color.RGBA{0x17, 0xa2, 0xb8, 0xff}, // seven systems: core, node, node+redis, node+streams, 3nodes+streams, node+redis+budget, 3nodes+redis
}

// draw writes the charts into dir and returns the files written.
func draw(rep report, dir string) ([]string, error) {
	sub := fmt.Sprintf("scale %s, %d round(s), %d CPUs", rep.Scale, rep.Rounds, rep.NumCPU)
	var files []string
	charts := []struct {
		file, title, y string
		data           *grouped
	}{
		{"bench-throughput.png", "Throughput: engine events per CPU-second (" + sub + ")", "events / CPU-second", throughput(rep)},
		{"bench-ratio.png", "Engine / raw Go baseline, events per CPU-second (" + sub + ")", "ratio (1 = as fast as the baseline)", ratio(rep)},
		{"bench-latency.png", "Open-loop latency, input to output (" + sub + ")", "milliseconds", latency(rep)},
	}
	for _, c := range charts {
		if len(c.data.categories) == 0 {
			fmt.Fprintf(os.Stderr, "benchplot: %s: no data in the report, not drawn\n", c.file)
			continue
		}
		width := vg.Length(max(7, 1.5*float64(len(c.data.categories))+1.5)) * vg.Inch
		p, err := barChart(c.title, c.y, c.data, width)
		if err != nil {
			return files, fmt.Errorf("%s: %w", c.file, err)
		}
		path := filepath.Join(dir, c.file)
		if err := p.Save(width, 4.2*vg.Inch, path); err != nil {
			return files, fmt.Errorf("save %s: %w", path, err)
		}
		files = append(files, path)
	}
	return files, nil
}

// barChart draws g as bars grouped by category, on a plot width wide.
func barChart(title, ylabel string, g *grouped, width vg.Length) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(6)
	p.Y.Label.Text = ylabel
	p.Add(plotter.NewGrid())
	n := float64(len(g.groups))
	cats := float64(len(g.categories))
	// Each category's bars fill 3/4 of its share of the axis (about 85% of
	// the plot's width once the y axis is drawn).
	w := 0.75 * (0.85 * width / vg.Length(cats)) / vg.Length(n)
	top := 0.0
	for _, vs := range g.values {
		for _, v := range vs {
			top = max(top, v)
		}
	}
	for i, grp := range g.groups {
		bars, err := plotter.NewBarChart(plotter.Values(g.values[grp]), w)
		if err != nil {
			return nil, fmt.Errorf("bars of %s: %w", grp, err)
		}
		bars.LineStyle.Width = 0
		bars.Color = palette[i%len(palette)]
		bars.Offset = w * vg.Length(float64(i)-(n-1)/2)
		p.Add(bars)
		p.Legend.Add(grp, bars)
	}
	p.NominalX(g.categories...)
	p.X.Min, p.X.Max = -0.5, cats-0.5
	p.Y.Min, p.Y.Max = 0, top*1.3 // room for the legend above the bars
	p.Y.Tick.Marker = niceTicks{}
	p.Legend.Top = true
	p.Legend.Padding = vg.Points(2)
	return p, nil
}
