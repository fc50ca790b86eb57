package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// nodeRounds runs the node systems' throughput rounds (node, node+redis,
// 3nodes+redis, node+redis+budget) and returns the lines the node and its
// baseline read.
func (h *harness) nodeRounds(r *Result, w *Workload, in Input, gen time.Duration) ([][]byte, error) {
	sys, lines := r.System, in.Lines
	addr, peers := "", 0
	if sys == SysNode3Redis {
		peers = 2
	}
	switch {
	case w.NodeJob == "":
		r.Skipped = w.NodeSkip
	case sys != SysNode && h.redis == nil:
		r.Skipped = "redis-server not found in PATH"
	case sys != SysNode:
		addr = h.redis.Addr
	}
	if r.Skipped != "" {
		return lines, nil
	}
	lines = pushedDown(r, in)
	baseline := w.Baseline
	if w.NodeBaseline != nil {
		baseline = w.NodeBaseline
		var srcs []string
		for _, s := range w.NodeSources {
			srcs = append(srcs, s.Name)
		}
		r.Notes = fmt.Sprintf("the node reads %d of the stream's %d events, as plain JSON from the file sources %s; "+
			"its baseline reads the same events", len(lines), len(in.Lines), strings.Join(srcs, " and "))
	}
	inPath := filepath.Join(h.dir, w.Name+".in.jsonl")
	inFiles, err := writeNodeInput(w, in, lines, inPath)
	if err != nil {
		return nil, err
	}
	var rs *redisServer
	if addr != "" {
		rs = h.redis
	}
	budget := ""
	if sys == SysNodeRedisBudget {
		if budget, err = h.calibrate(r, w, inPath, addr, rs); err != nil {
			return nil, err
		}
	}
	var passivations []float64
	var kr keyRequestsOf
	err = runRounds(r, h.o.Rounds, gen, h.logf, rs,
		func(p func(int)) (RunResult, error) {
			res, err := h.nodeOnce(w, inPath, addr, budget, peers, rs)
			passivations = append(passivations, float64(res.BudgetPassivations))
			kr.add(res)
			return res, err
		},
		func(p func(int)) (RunResult, error) { return baseline(lines, p), nil })
	for _, f := range inFiles {
		os.Remove(f)
	}
	if sys == SysNodeRedisBudget && len(passivations) > 0 {
		r.BudgetPassivations = int64(median(passivations))
	}
	r.KeyRequests = kr.median()
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", w.Name, sys, err)
	}
	return lines, nil
}

// pushedDown is what a node level reads of in: its NodeLines, the
// stream's events its filters keep, when it has them (noted in r), else
// all of them.
func pushedDown(r *Result, in Input) [][]byte {
	if in.NodeLines == nil {
		return in.Lines
	}
	r.InputLines = len(in.NodeLines)
	r.Notes = fmt.Sprintf("filters pushed down to the source: the node and its baseline read %d of the %d stream events", len(in.NodeLines), len(in.Lines))
	return in.NodeLines
}

// calibrate runs the node once with every key live, unmeasured, and sets
// r's working set (the live keys' accounted bytes) and the memory budget
// it derives (BudgetWorkingSet): the budget as state.memory_budget says it.
func (h *harness) calibrate(r *Result, w *Workload, inPath, addr string, rs *redisServer) (string, error) {
	h.runID++
	if err := rs.Flush(); err != nil {
		return "", err
	}
	cal, err := nodeRun(h.ctx, w, h.dir, inPath, addr, "", h.runID, 0, func(f func() error) error { return f() })
	if err != nil {
		return "", fmt.Errorf("%s/%s calibration: %w", w.Name, r.System, err)
	}
	r.WorkingSetBytes = cal.Accounted
	r.BudgetBytes = max(cal.Accounted/BudgetWorkingSet, 1)
	h.logf("  %s/%s: working set %.1f MiB accounted, budget %.1f MiB", w.Name, r.System, float64(r.WorkingSetBytes)/(1<<20), float64(r.BudgetBytes)/(1<<20))
	return strconv.FormatInt(r.BudgetBytes, 10), nil
}

// nodeOnce is one measured node run: on rs (nil: the embedded store),
// emptied first, with what the node sent Redis over the run.
func (h *harness) nodeOnce(w *Workload, inPath, addr, budget string, peers int, rs *redisServer) (RunResult, error) {
	h.runID++
	var c0 redisCounters
	if rs != nil {
		if err := rs.Flush(); err != nil {
			return RunResult{}, err
		}
		var err error
		if c0, err = rs.counters(); err != nil {
			return RunResult{}, err
		}
	}
	res, err := nodeRun(h.ctx, w, h.dir, inPath, addr, budget, h.runID, peers, func(f func() error) error { return f() })
	if err == nil && rs != nil {
		c1, cerr := rs.counters()
		if cerr != nil {
			return res, cerr
		}
		res.RedisInBytes, res.RDBSaves = c1.inBytes-c0.inBytes, c1.saves-c0.saves
		res.RedisCommands = c1.commandsSince(c0)
	}
	return res, err
}

// streamsRounds runs the co-partitioned stream systems' throughput rounds
// (node+streams, 3nodes+streams) on *streams, made at the first, and
// returns the lines their baseline reads.
func (h *harness) streamsRounds(r *Result, w *Workload, in Input, gen time.Duration, streams **streamInput) ([][]byte, error) {
	sys, lines := r.System, in.Lines
	switch {
	case w.NodeJob == "":
		r.Skipped = w.NodeSkip
	case len(w.NodeSources) > 0:
		r.Skipped = streamsSkip
	case h.redis == nil:
		r.Skipped = "redis-server not found in PATH"
	}
	if r.Skipped != "" {
		return lines, nil
	}
	if in.NodeLines != nil {
		lines = in.NodeLines
		r.Notes = fmt.Sprintf("filters pushed down to the source: the node and its baseline read %d of the %d stream events", len(lines), len(in.Lines))
	}
	if *streams == nil {
		var err error
		if *streams, err = newStreamInput(w, lines, streamShards); err != nil {
			return nil, err
		}
	}
	r.InputLines = (*streams).entries
	nodes := 1
	if sys == SysNode3Streams {
		nodes = 3
	}
	var kr keyRequestsOf
	err := runRounds(r, h.o.Rounds, gen, h.logf, h.redis,
		func(p func(int)) (RunResult, error) {
			h.runID++
			res, err := streamsRun(h.ctx, w, h.dir, *streams, h.redis, h.runID, nodes, -1)
			kr.add(res)
			if r.OutputsPerNode == nil {
				r.OutputsPerNode = res.OutputsPerNode
			}
			return res, err
		},
		func(p func(int)) (RunResult, error) { return w.Baseline(lines, p), nil })
	r.KeyRequests = kr.median()
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", w.Name, sys, err)
	}
	return lines, nil
}
