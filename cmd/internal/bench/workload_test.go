package bench

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/joinery/joinery/cmd/internal/bench/nexmark"
	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/record"
)

// TestCoreMatchesBaseline: on the tiny scale, the engine's core loop and the
// plain Go baseline agree on every workload's result checksum.
func TestCoreMatchesBaseline(t *testing.T) {
	for _, w := range Workloads {
		t.Run(w.Name, func(t *testing.T) {
			in := w.Generate(Scales["tiny"], 1)
			noProbe := func(int) {}
			core := w.Core(in.Lines, noProbe)
			base := w.Baseline(in.Lines, noProbe)
			if !core.Check.Equal(base.Check) {
				t.Fatalf("core %v (%d outputs) != baseline %v (%d outputs)", core.Check, core.Check.Outs, base.Check, base.Check.Outs)
			}
			if core.Check.Rows <= 0 {
				t.Errorf("empty result (%v): the workload joins nothing at this scale", core.Check)
			}
			if core.Late != 0 || base.Late != 0 || core.Rejected != 0 {
				t.Errorf("late %d/%d, rejected %d: want none", core.Late, base.Late, core.Rejected)
			}
			switch {
			case w.NodeBaseline != nil:
				// The node's own input (another encoding) gives the core's result.
				nb := w.NodeBaseline(in.NodeLines, noProbe)
				if !nb.Check.Equal(core.Check) || nb.Late != 0 {
					t.Errorf("node input gives %v (late %d), stream %v", nb.Check, nb.Late, core.Check)
				}
			case in.NodeLines != nil:
				nc := w.Core(in.NodeLines, noProbe)
				if !nc.Check.Equal(core.Check) {
					t.Errorf("pushed-down input gives %v, full input %v", nc.Check, core.Check)
				}
			}
			if w.SkewOf != "" && (in.HotKeyShare < 0.4 || in.HotKeyShare > 0.7) {
				t.Errorf("hot key share %.2f, want about half", in.HotKeyShare)
			}
			t.Logf("%s: %d lines, result %v, %d outputs, %d live keys", w.Name, len(in.Lines), core.Check, core.Check.Outs, core.LiveKeys)
		})
	}
}

// TestQ8NodeInput: q8's node input files hold every person and auction of
// the stream, in stream order, with the fields q8 reads equal to the
// stream's, and nothing else; NodeLines is their union in stream order.
func TestQ8NodeInput(t *testing.T) {
	in := q8.Generate(Scales["tiny"], 1)
	want := map[string][]record.Row{}
	var union [][]byte
	for i, line := range in.Lines {
		ch, err := debezium.Decode(line, record.Position{Offset: int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		var src string
		var cols []string
		switch tableOf(line) {
		case nexmark.Tables[nexmark.KindPerson]:
			src, cols = "persons", []string{"id", "name", "dateTime"}
		case nexmark.Tables[nexmark.KindAuction]:
			src, cols = "auctions", []string{"seller", "reserve", "dateTime"}
		default:
			continue
		}
		row := record.Row{}
		for _, c := range cols {
			row[c] = ch.After[c]
		}
		if n := len(want[src]); n < len(in.Sides[src]) {
			union = append(union, in.Sides[src][n]) // the side files interleaved as the stream is
		}
		want[src] = append(want[src], row)
	}
	if len(want["persons"]) == 0 || len(want["auctions"]) == 0 {
		t.Fatalf("the stream has %d persons and %d auctions", len(want["persons"]), len(want["auctions"]))
	}
	if len(in.Sides) != len(q8.NodeSources) {
		t.Errorf("%d side files, want one per source %+v", len(in.Sides), q8.NodeSources)
	}
	for _, s := range q8.NodeSources {
		got := in.Sides[s.Name]
		if len(got) != len(want[s.Name]) {
			t.Errorf("%s: %d lines, the stream has %d", s.Name, len(got), len(want[s.Name]))
			continue
		}
		for i, line := range got {
			d := json.NewDecoder(bytes.NewReader(line))
			d.UseNumber()
			var row record.Row
			if err := d.Decode(&row); err != nil {
				t.Fatalf("%s line %d: %v", s.Name, i, err)
			}
			if len(row) != len(want[s.Name][i]) {
				t.Errorf("%s line %d: %s, want the fields %v", s.Name, i, line, want[s.Name][i])
			}
			for c, v := range want[s.Name][i] {
				if row[c] != v {
					t.Errorf("%s line %d: %s = %v, the stream's %v", s.Name, i, c, row[c], v)
				}
			}
		}
	}
	if len(in.NodeLines) != len(union) {
		t.Fatalf("NodeLines has %d lines, the side files %d", len(in.NodeLines), len(union))
	}
	for i := range union {
		if !bytes.Equal(in.NodeLines[i], union[i]) {
			t.Fatalf("NodeLines[%d] = %s, want %s (the side files' union in stream order)", i, in.NodeLines[i], union[i])
		}
	}
}
