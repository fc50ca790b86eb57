package fleetbench

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestPlot draws a report, a figure missing included, and decodes the PNG.
func TestPlot(t *testing.T) {
	rep := Report{QuotaCPU: 0.3, Results: []Result{
		{Workload: "cdc", Nodes: 1, EventsPerSec: 1000, P99Ms: 40, CPUPerEventUs: 300},
		{Workload: "cdc", Nodes: 2, EventsPerSec: 1800, P99Ms: math.NaN(), CPUPerEventUs: 330},
	}}
	path := filepath.Join(t.TempDir(), "scaling.png")
	if err := Plot(rep, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if w := img.Bounds().Dx(); w < 1000 {
		t.Fatalf("plot is %d px wide, want three panels", w)
	}
}
