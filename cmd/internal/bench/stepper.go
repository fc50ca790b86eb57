package bench

// Stepper is an engine's core loop over one input, one line at a time, so
// that the throughput run (RunStepper: as fast as it goes) and the
// open-loop latency run (OpenLoop: lines released on a fixed schedule)
// drive the same code. It is used by one goroutine.
type Stepper interface {
	// Step applies line i and returns how many outputs it produced,
	// including the windows or auctions its watermark advance closed.
	Step(i int, line []byte) int
	// Live is the number of keys holding state now.
	Live() int
	// Finish ends the input (the watermark goes to +inf, firing what is
	// left) and returns the run's result; LiveKeys is left to the caller.
	Finish() RunResult
}

// RunStepper steps s through lines, probes the live state at the end of
// input (before the end-of-input flush) and finishes.
func RunStepper(s Stepper, lines [][]byte, probe func(live int)) RunResult {
	for i, line := range lines {
		s.Step(i, line)
	}
	live := s.Live()
	probe(live)
	res := s.Finish()
	res.LiveKeys = live
	return res
}

// coreOf adapts a Stepper constructor to Workload.Core.
func coreOf(newStepper func() Stepper) func([][]byte, func(int)) RunResult {
	return func(lines [][]byte, probe func(int)) RunResult { return RunStepper(newStepper(), lines, probe) }
}
