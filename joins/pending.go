package joins

import (
	"fmt"
	"slices"
)

// Wait is one thing a key's event-time join is waiting for: an output (or a
// buffer's release) that happens once the watermark reaches Needs. The admin
// CLI's `key why` shows these next to the current watermark and the
// partition that holds it back.
type Wait struct {
	// What says what happens, e.g. "window [0,2) fires: 2 left, 1 right".
	What string `json:"what"`
	// Needs is the watermark at which it happens (the timer's time).
	Needs int64 `json:"needs_watermark"`
}

// Explainer is implemented by the event-time joins that can say what they
// wait for. Pending lists at most limit waits, soonest first.
type Explainer interface {
	Pending(limit int) []Wait
}

var (
	_ Explainer = (*Windowed)(nil)
	_ Explainer = (*Interval)(nil)
	_ Explainer = (*TimeBounded)(nil)
	_ Explainer = (*Temporal)(nil)
	_ Explainer = (*TemporalLatest)(nil)
)

// sortWaits orders waits by Needs (stable, so equal times keep the join's
// order) and cuts them to limit.
func sortWaits(ws []Wait, limit int) []Wait {
	slices.SortStableFunc(ws, func(a, b Wait) int {
		switch {
		case a.Needs < b.Needs:
			return -1
		case a.Needs > b.Needs:
			return 1
		}
		return 0
	})
	if limit >= 0 && len(ws) > limit {
		ws = ws[:limit]
	}
	return ws
}

// Pending lists each window that has not fired (it fires when the watermark
// reaches its end - 1) and each fired window kept for allowed lateness.
func (j *Windowed) Pending(limit int) []Wait {
	var ws []Wait
	for _, w := range j.wins {
		if !w.Fired {
			ws = append(ws, Wait{What: fmt.Sprintf("window %s fires: %d left, %d right", w.W, len(w.L), len(w.R)), Needs: w.W.MaxTimestamp()})
		}
		if c := j.cleanupAt(w.W); w.Fired || c != w.W.MaxTimestamp() {
			ws = append(ws, Wait{What: fmt.Sprintf("window %s is kept for late elements (allowed lateness), then dropped", w.W), Needs: c})
		}
	}
	return sortWaits(ws, limit)
}

// Pending lists when each buffered row stops being able to match and is
// dropped.
func (j *Interval) Pending(limit int) []Wait {
	var ws []Wait
	for _, l := range j.left {
		ws = append(ws, Wait{What: fmt.Sprintf("left row at %d is kept for matches, then dropped", l.Ts), Needs: addSat(addSat(l.Ts, j.hi), 1)})
	}
	for _, r := range j.right {
		ws = append(ws, Wait{What: fmt.Sprintf("right row at %d is kept for matches, then dropped", r.Ts), Needs: addSat(subSat(r.Ts, j.lo), 1)})
	}
	return sortWaits(ws, limit)
}

// Pending lists, for each buffered row, when its range closes: an unmatched
// row of an outer side is then emitted with nulls, any other row dropped.
func (j *TimeBounded) Pending(limit int) []Wait {
	var ws []Wait
	what := func(side string, m matchElem, pad bool) string {
		switch {
		case m.Matched:
			return fmt.Sprintf("%s row at %d (matched) is kept for more matches, then dropped", side, m.Ts)
		case pad:
			return fmt.Sprintf("%s row at %d (unmatched) is emitted with nulls unless a match arrives", side, m.Ts)
		}
		return fmt.Sprintf("%s row at %d (unmatched) is kept for matches, then dropped", side, m.Ts)
	}
	for _, l := range j.left {
		ws = append(ws, Wait{What: what("left", l, j.typ.padLeft()), Needs: addSat(addSat(l.Ts, j.hi), 1)})
	}
	for _, r := range j.right {
		ws = append(ws, Wait{What: what("right", r, j.typ.padRight()), Needs: addSat(subSat(r.Ts, j.lo), 1)})
	}
	return sortWaits(ws, limit)
}

// Pending lists each probe waiting for the watermark to pass its time, and
// each version kept until the watermark shows no probe can reach it.
func (j *Temporal) Pending(limit int) []Wait {
	var ws []Wait
	for _, p := range j.probes {
		v := "no version yet"
		if j.versionAt(p.Ts) != nil {
			v = "a version is there"
		}
		ws = append(ws, Wait{What: fmt.Sprintf("probe at %d is emitted when the watermark passes it (%s)", p.Ts, v), Needs: addSat(p.Ts, 1)})
	}
	for i := 1; i < len(j.versions); i++ {
		ws = append(ws, Wait{What: fmt.Sprintf("version at %d is dropped when the one at %d is the newest the watermark reached", j.versions[i-1].Ts, j.versions[i].Ts), Needs: j.versions[i].Ts})
	}
	return sortWaits(ws, limit)
}

// Pending is empty: the processing-time temporal join emits at once.
func (j *TemporalLatest) Pending(int) []Wait { return nil }
