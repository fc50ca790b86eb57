package fleetbench

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// palette is cmd/benchplot's.
var palette = []color.Color{
	color.RGBA{0x2f, 0x6f, 0xde, 0xff}, color.RGBA{0xd9, 0x82, 0x2b, 0xff}, color.RGBA{0x1f, 0x8a, 0x4c, 0xff},
	color.RGBA{0x8e, 0x44, 0xad, 0xff},
}

// Plot draws throughput (with the linear ideal, N × throughput(1)), p99
// latency and node CPU per event against the number of nodes, one line per
// workload (and source, when the report has more than one), side by side
// in one PNG at path.
func Plot(rep Report, path string) error {
	type series struct{ source, workload string }
	var wls []series
	var srcs []string
	for _, r := range rep.Results {
		if s := (series{r.Source, r.Workload}); !slices.Contains(wls, s) {
			wls = append(wls, s)
		}
		if !slices.Contains(srcs, r.Source) {
			srcs = append(srcs, r.Source)
		}
	}
	sub := fmt.Sprintf("%.2g CPU per node", rep.QuotaCPU)
	tp := plot.New()
	tp.Title.Text = "Throughput (" + sub + ")"
	tp.X.Label.Text = "nodes"
	tp.Y.Label.Text = "events / s"
	lp := plot.New()
	lp.Title.Text = "Open-loop p99 latency (half the max rate)"
	lp.X.Label.Text = "nodes"
	lp.Y.Label.Text = "p99 ms"
	cp := plot.New()
	cp.Title.Text = "Node CPU per event"
	cp.X.Label.Text = "nodes"
	cp.Y.Label.Text = "µs (all nodes' CPU / events)"
	for _, p := range []*plot.Plot{tp, lp, cp} {
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		p.Legend.Left = true
		p.X.Min = 0.5
		p.Y.Min = 0
	}
	maxN := 1
	for i, s := range wls {
		w := s.workload
		if len(srcs) > 1 {
			w += " " + s.source
		}
		var xy, ideal, lat, cpu plotter.XYs
		var one float64
		for _, r := range rep.Results {
			if r.Workload != s.workload || r.Source != s.source {
				continue
			}
			maxN = max(maxN, r.Nodes)
			xy = append(xy, plotter.XY{X: float64(r.Nodes), Y: r.EventsPerSec})
			if r.Nodes == 1 {
				one = r.EventsPerSec
			}
			if r.CPUPerEventUs > 0 {
				cpu = append(cpu, plotter.XY{X: float64(r.Nodes), Y: r.CPUPerEventUs})
			}
			if !math.IsNaN(r.P99Ms) && r.P99Ms >= 0 {
				lat = append(lat, plotter.XY{X: float64(r.Nodes), Y: r.P99Ms})
			}
		}
		col := palette[i%len(palette)]
		if err := addLine(tp, w, xy, col, false); err != nil {
			return err
		}
		if one > 0 {
			for _, p := range xy {
				ideal = append(ideal, plotter.XY{X: p.X, Y: p.X * one})
			}
			if err := addLine(tp, w+" linear", ideal, col, true); err != nil {
				return err
			}
		}
		if len(lat) > 0 {
			if err := addLine(lp, w, lat, col, false); err != nil {
				return err
			}
		}
		if len(cpu) > 0 {
			if err := addLine(cp, w, cpu, col, false); err != nil {
				return err
			}
		}
	}
	lp.Legend.Left, cp.Legend.Left = false, false
	for _, p := range []*plot.Plot{tp, lp, cp} {
		p.X.Max = float64(maxN) + 0.5
		p.X.Tick.Marker = intTicks{}
	}
	const w, h = 14 * vg.Inch, 4.2 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 3, PadX: vg.Points(12), PadY: vg.Points(6), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	canvases := plot.Align([][]*plot.Plot{{tp, lp, cp}}, tiles, dc)
	tp.Draw(canvases[0][0])
	lp.Draw(canvases[0][1])
	cp.Draw(canvases[0][2])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func addLine(p *plot.Plot, name string, xy plotter.XYs, col color.Color, dashed bool) error {
	l, pts, err := plotter.NewLinePoints(xy)
	if err != nil {
		return fmt.Errorf("plot %s: %w", name, err)
	}
	l.Color, pts.Color = col, col
	l.Width = vg.Points(2)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		l.Width = vg.Points(1)
		p.Add(l)
	} else {
		p.Add(l, pts)
	}
	p.Legend.Add(name, l)
	return nil
}

// intTicks labels whole numbers only.
type intTicks struct{}

func (intTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for v := math.Ceil(lo); v <= hi; v++ {
		ts = append(ts, plot.Tick{Value: v, Label: fmt.Sprint(v)})
	}
	return ts
}
