package joins

import (
	"slices"

	"github.com/joinery/joinery/record"
)

// Windowed is the per-key state of a window join or a window coGroup: per
// window, each side's elements in arrival order, and whether the window has
// fired. Windows are kept sorted by (end, start). It implements Timed.
//
// Timers: a window registers MaxTimestamp (fire) and MaxTimestamp +
// AllowedLateness (cleanup; the same timer when the lateness is 0); under
// LateAtWatermark, End and End + AllowedLateness. Timers
// are a set per key: a time registered twice is one timer, and OnTimer(ts)
// does everything due at or before ts. Session merges delete the timers of
// the windows they replace unless another window still needs them.
//
// Late data: an element all of whose windows satisfy MaxTimestamp (End
// under LateAtWatermark) + AllowedLateness <= watermark is reported Late with LateWindowClosed (in a
// sliding assigner, windows already closed are skipped silently while one is
// open, as in Flink); a time that falls in no window (a slide larger than the
// size) is reported with LateNoWindow.
//
// A Windowed is not safe for concurrent use. It keeps the rows it is given
// and shares them with its outputs: treat them as read-only.
type Windowed struct {
	assigner Assigner
	lateness int64
	rule     LateRule
	fire     func(w *winState, fx *Effects)
	// where, typ and shape: a window join with a residual condition (nil
	// where: none, or a coGroup).
	where *Condition
	// onArrival: pairs are emitted as rows arrive (WindowJoinSpec.OnArrival);
	// fire pads the unmatched rows only.
	onArrival bool
	typ       TimedJoinType
	shape     *pairShape
	wins      []*winState
	scratch   []Window
}

// LateNoWindow: the element's time lies in no window of the assigner.
const LateNoWindow = "no-window"

type winState struct {
	W Window `json:"w"`
	// First is the position of the window's first element (either side);
	// coGroup output ids derive from it.
	First record.Position `json:"a"`
	Fired bool            `json:"f,omitempty"`
	L     []elem          `json:"l,omitempty"`
	R     []elem          `json:"r,omitempty"`
	// LM and RM (emit on-arrival only) hold the positions in L and R of the
	// rows that have matched, ascending.
	LM []int `json:"lm,omitempty"`
	RM []int `json:"rm,omitempty"`
}

// matched reports whether the i-th row of side has matched (on-arrival).
func (w *winState) matched(side record.Side, i int) bool {
	m := w.LM
	if side == record.Right {
		m = w.RM
	}
	_, ok := slices.BinarySearch(m, i)
	return ok
}

func (w *winState) markMatched(side record.Side, i int) {
	m := &w.LM
	if side == record.Right {
		m = &w.RM
	}
	if k, ok := slices.BinarySearch(*m, i); !ok {
		*m = slices.Insert(*m, k, i)
	}
}

// joinArrival emits the pairs of the row just added to w (the last of its
// side) with the other side's rows, in their arrival order, and marks both
// rows of each pair matched.
func (j *Windowed) joinArrival(w *winState, side record.Side, fx *Effects) {
	ts, end := w.W.MaxTimestamp(), w.W.End
	if j.typ.semi() {
		// A left semi join: a left row once, at its first match.
		if side == record.Left {
			i := len(w.L) - 1
			for k := range w.R {
				if j.where.match(w.L[i].Row, w.R[k].Row) {
					emitPair(fx, j.shape, "window", ts, &w.L[i], nil, end)
					w.markMatched(record.Left, i)
					return
				}
			}
			return
		}
		k := len(w.R) - 1
		for i := range w.L {
			if !w.matched(record.Left, i) && j.where.match(w.L[i].Row, w.R[k].Row) {
				emitPair(fx, j.shape, "window", ts, &w.L[i], nil, end)
				w.markMatched(record.Left, i)
			}
		}
		return
	}
	if side == record.Left {
		i := len(w.L) - 1
		for k := range w.R {
			if j.where.match(w.L[i].Row, w.R[k].Row) {
				emitPair(fx, j.shape, "window", ts, &w.L[i], &w.R[k], end)
				w.markMatched(record.Left, i)
				w.markMatched(record.Right, k)
			}
		}
		return
	}
	k := len(w.R) - 1
	for i := range w.L {
		if j.where.match(w.L[i].Row, w.R[k].Row) {
			emitPair(fx, j.shape, "window", ts, &w.L[i], &w.R[k], end)
			w.markMatched(record.Left, i)
			w.markMatched(record.Right, k)
		}
	}
}

// fireAt is the watermark that fires window w: MaxTimestamp, or End under
// LateAtWatermark.
func (j *Windowed) fireAt(w Window) int64 {
	if j.rule == LateAtWatermark {
		return w.End
	}
	return w.MaxTimestamp()
}

func (j *Windowed) cleanupAt(w Window) int64 { return addSat(j.fireAt(w), j.lateness) }

// timersOf returns the timers window w needs.
func (j *Windowed) timersOf(w *winState) []int64 {
	c := j.cleanupAt(w.W)
	if w.Fired || c == j.fireAt(w.W) {
		return []int64{c}
	}
	return []int64{j.fireAt(w.W), c}
}

// needed reports whether any window still needs timer ts.
func (j *Windowed) needed(ts int64) bool {
	for _, w := range j.wins {
		if j.cleanupAt(w.W) == ts || !w.Fired && j.fireAt(w.W) == ts {
			return true
		}
	}
	return false
}

func winLess(a, b Window) int {
	if a.End != b.End {
		if a.End < b.End {
			return -1
		}
		return 1
	}
	switch {
	case a.Start < b.Start:
		return -1
	case a.Start > b.Start:
		return 1
	}
	return 0
}

func (j *Windowed) find(w Window) (int, bool) {
	return slices.BinarySearchFunc(j.wins, w, func(s *winState, w Window) int { return winLess(s.W, w) })
}

// insert adds a new window and registers its timers.
func (j *Windowed) insert(ws *winState, fx *Effects) {
	i, _ := j.find(ws.W)
	for _, ts := range j.timersOf(ws) {
		if !j.needed(ts) {
			fx.SetTimers = append(fx.SetTimers, ts)
		}
	}
	j.wins = slices.Insert(j.wins, i, ws)
}

func add(ws *winState, side record.Side, e elem) {
	if side == record.Left {
		ws.L = append(ws.L, e)
	} else {
		ws.R = append(ws.R, e)
	}
}

// OnElement adds e to its windows. A window whose MaxTimestamp the watermark
// has already reached (but not its cleanup time) fires at once: a late
// firing.
func (j *Windowed) OnElement(e Element, watermark int64, fx *Effects) {
	if e.Side != record.Left && e.Side != record.Right {
		fx.Late = append(fx.Late, Late{Element: e, Reason: LateUnknownSide})
		return
	}
	el := elemOf(e)
	if j.assigner.merging() {
		j.onSession(e, el, watermark, fx)
		return
	}
	j.scratch = j.assigner.Assign(e.Ts, j.scratch[:0])
	if len(j.scratch) == 0 {
		fx.Late = append(fx.Late, Late{Element: e, Reason: LateNoWindow})
		return
	}
	excluded := j.where != nil && !j.where.side(e.Side, e.Row)
	added := false
	for _, w := range j.scratch {
		if j.cleanupAt(w) <= watermark {
			continue
		}
		added = true
		if excluded {
			// Early state exclusion: it can never match in this window.
			switch {
			case e.Side == record.Left && j.typ.padLeft():
				emitPair(fx, j.shape, "window", w.MaxTimestamp(), &el, nil, w.End)
			case e.Side == record.Right && j.typ.padRight():
				emitPair(fx, j.shape, "window", w.MaxTimestamp(), nil, &el, w.End)
			}
			continue
		}
		i, ok := j.find(w)
		var ws *winState
		if ok {
			ws = j.wins[i]
			add(ws, e.Side, el)
		} else {
			ws = &winState{W: w, First: e.Pos}
			add(ws, e.Side, el)
			if j.fireAt(w) <= watermark {
				ws.Fired = true // fires below; only the cleanup timer is needed
			}
			j.insert(ws, fx)
		}
		if j.onArrival {
			j.joinArrival(ws, e.Side, fx)
		}
		if j.fireAt(w) <= watermark {
			j.fire(ws, fx)
			ws.Fired = true
		}
	}
	if !added {
		fx.Late = append(fx.Late, Late{Element: e, Reason: LateWindowClosed})
	}
}

// onSession merges the element's window [ts, ts+gap) with every window of
// the key it overlaps or touches, moving their buffers (in window order) and
// replacing their timers.
func (j *Windowed) onSession(e Element, el elem, watermark int64, fx *Effects) {
	merged := j.assigner.Assign(e.Ts, j.scratch[:0])[0]
	var parts []int
	for changed := true; changed; {
		changed = false
		for i, ws := range j.wins {
			if !slices.Contains(parts, i) && ws.W.intersects(merged) {
				parts = append(parts, i)
				merged = merged.cover(ws.W)
				changed = true
			}
		}
	}
	if j.cleanupAt(merged) <= watermark {
		fx.Late = append(fx.Late, Late{Element: e, Reason: LateWindowClosed})
		return
	}
	slices.Sort(parts)
	ws := &winState{W: merged, First: e.Pos}
	if len(parts) > 0 {
		ws.First = j.wins[parts[0]].First
	}
	var old []int64
	for _, i := range parts {
		p := j.wins[i]
		ws.L = append(ws.L, p.L...)
		ws.R = append(ws.R, p.R...)
		old = append(old, j.timersOf(p)...)
	}
	for k := len(parts) - 1; k >= 0; k-- {
		j.wins = slices.Delete(j.wins, parts[k], parts[k]+1)
	}
	add(ws, e.Side, el)
	late := j.fireAt(merged) <= watermark
	ws.Fired = late
	// Register the new window's timers (unless an old one stays), then
	// delete the old windows' timers nobody needs any more.
	i, _ := j.find(ws.W)
	for _, ts := range j.timersOf(ws) {
		if !slices.Contains(old, ts) && !j.needed(ts) {
			fx.SetTimers = append(fx.SetTimers, ts)
		}
	}
	j.wins = slices.Insert(j.wins, i, ws)
	slices.Sort(old)
	old = slices.Compact(old)
	for _, ts := range old {
		if !j.needed(ts) {
			fx.DelTimers = append(fx.DelTimers, ts)
		}
	}
	if late {
		j.fire(ws, fx)
	}
}

// OnTimer fires, in (end, start) order, every window not yet fired whose
// MaxTimestamp (End under LateAtWatermark) is <= ts, then drops every window whose cleanup time is <= ts.
func (j *Windowed) OnTimer(ts int64, watermark int64, fx *Effects) {
	for _, ws := range j.wins {
		if !ws.Fired && j.fireAt(ws.W) <= ts {
			j.fire(ws, fx)
			ws.Fired = true
		}
	}
	j.wins = slices.DeleteFunc(j.wins, func(ws *winState) bool { return j.cleanupAt(ws.W) <= ts })
	if len(j.wins) == 0 {
		j.wins = nil
	}
}

// Empty reports whether the key holds no window.
func (j *Windowed) Empty() bool { return len(j.wins) == 0 }

// Windows returns the key's windows in (end, start) order (for inspection).
func (j *Windowed) Windows() []Window {
	out := make([]Window, len(j.wins))
	for i, w := range j.wins {
		out[i] = w.W
	}
	return out
}
