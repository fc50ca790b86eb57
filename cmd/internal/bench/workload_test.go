package bench

import "testing"

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
			if in.NodeLines != nil {
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
