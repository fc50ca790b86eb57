package joins

import (
	"fmt"
	"slices"

	"github.com/joinery/joinery/record"
)

// WindowJoinSpec describes a window join (Flink's
// join(...).where(...).equalTo(...).window(...).apply(...)): the elements of
// both sides of one key that share a window are joined pairwise when the
// watermark reaches the window's MaxTimestamp, and every result is stamped
// with it (seed flink-joining: window [5,10) → 9).
//
// Type TimedInner is the seed's inner window join. The outer types are built
// on the coGroup: a window that holds only one side's elements emits each of
// them padded with nulls when that side is an outer side; a window holding
// both sides emits its pairs only.
//
// It is a plain value: fill it, call Validate, then share a pointer to it,
// read-only, among all keys' joins.
type WindowJoinSpec struct {
	Type TimedJoinType
	// Left and Right name the sides; without Project, Join or FlatJoin the
	// output row is {Left: left row, Right: right row} (null when padded).
	Left, Right string
	Assigner    Assigner
	// AllowedLateness (ms, >= 0) keeps a window's state after it fired, until
	// the watermark reaches MaxTimestamp + AllowedLateness; an element for it
	// in between fires the window again (a late firing). Zero by default.
	AllowedLateness int64
	// Join makes one output row per pair; FlatJoin zero or more. At most one
	// may be set; with neither, the row is the projection (or the pair).
	Join     JoinFunc
	FlatJoin FlatJoinFunc
	// Project lists the output columns; only without Join and FlatJoin.
	Project []Column
	// Where is the residual condition of a pair, after the key and the
	// window (zero: none). With one, a window emits the pairs that pass it
	// and, on an outer side, pads each row that matched none of the
	// window's other-side rows. A row failing its own side's part is not
	// buffered (tumbling and sliding windows): on an outer side it is
	// emitted padded at once for each of its open windows, stamped end - 1;
	// in session windows it is buffered, since it still shapes the session,
	// and padded when the window fires.
	Where Condition
	// Late is the late-data rule: LateBeforeWatermark (zero; a window fires
	// when the watermark reaches end - 1, Flink's) or LateAtWatermark (it
	// fires when the watermark reaches end, Spark's: a window is complete
	// once end <= watermark). Outputs are stamped end - 1 either way.
	Late LateRule
	// OnArrival emits as Spark's windowed stream-stream join does (an
	// equi-join on the window column): a pair as soon as both rows of one
	// window are there, stamped end - 1, and at the window's close only the
	// rows of an outer side that matched nothing, padded. Without it
	// (Flink's), a window's pairs and padded rows all come out at its close.
	// Tumbling and sliding windows only, without AllowedLateness (Spark has
	// neither session windows in joins nor late firings).
	OnArrival bool
}

// Validate reports every problem of the spec, joined with errors.Join, each
// naming its field, e.g. "assigner.size: must be positive, got 0".
func (s *WindowJoinSpec) Validate() error {
	if s == nil {
		return fmt.Errorf("joins: nil window join spec")
	}
	var c collector
	if !s.Type.valid() {
		c.bad("type", "unknown join type %d (want inner, left, right, full or semi)", int(s.Type))
	}
	validateSemi(&c, s.Type, s.Project)
	if s.Type.semi() && (s.Join != nil || s.FlatJoin != nil) {
		c.bad("type", "a left semi join outputs the left row: no join function")
	}
	s.Assigner.validate(&c, "assigner.")
	if s.AllowedLateness < 0 {
		c.bad("allowed_lateness", "must not be negative, got %d", s.AllowedLateness)
	}
	validateLate(&c, s.Late, false)
	if s.OnArrival {
		if s.Assigner.merging() {
			c.bad("emit", "on-arrival is for tumbling and sliding windows, not session windows")
		}
		if s.AllowedLateness != 0 {
			c.bad("allowed_lateness", "must be 0 with emit on-arrival (a window never fires again), got %d", s.AllowedLateness)
		}
	}
	validateShape(c.bad, s.Left, s.Right, s.Project, s.Join, s.FlatJoin)
	return c.err()
}

// NewWindowJoin returns the empty state of one key of a window join. spec
// must be valid and must not change while the join is in use.
//
// Outputs: the pairs of a window in left arrival order × right arrival
// order (with a Where condition, each left row's pairs followed by the row
// padded when it matched none, then the unmatched right rows padded),
// windows in (end, start) order, each +I stamped MaxTimestamp, with
// id window|leftPos|rightPos|end|n (n: index among FlatJoin's rows; see
// outputID). A late firing re-emits every pair of the window, old and new,
// with the same ids as before, as Flink re-fires the whole window; a
// downstream upsert or dedup by id keeps one copy. A session window that
// grows by a merge has a new end, hence new ids.
func NewWindowJoin(spec *WindowJoinSpec) *Windowed {
	shape := &pairShape{left: spec.Left, right: spec.Right, project: spec.Project, join: spec.Join, flat: spec.FlatJoin, semi: spec.Type.semi()}
	t := spec.Type
	j := &Windowed{
		assigner: spec.Assigner,
		lateness: spec.AllowedLateness,
		rule:     spec.Late,
		typ:      t,
		shape:    shape,
	}
	if spec.OnArrival {
		where := spec.Where
		j.where, j.onArrival = &where, true
		j.fire = func(w *winState, fx *Effects) {
			ts, end := w.W.MaxTimestamp(), w.W.End
			if t.padLeft() {
				for i := range w.L {
					if !w.matched(record.Left, i) {
						emitPair(fx, shape, "window", ts, &w.L[i], nil, end)
					}
				}
			}
			if t.padRight() {
				for k := range w.R {
					if !w.matched(record.Right, k) {
						emitPair(fx, shape, "window", ts, nil, &w.R[k], end)
					}
				}
			}
		}
		return j
	}
	if spec.Where.IsZero() {
		j.fire = func(w *winState, fx *Effects) {
			ts, end := w.W.MaxTimestamp(), w.W.End
			switch {
			case t.semi():
				if len(w.R) > 0 {
					for i := range w.L {
						emitPair(fx, shape, "window", ts, &w.L[i], nil, end)
					}
				}
			case len(w.L) > 0 && len(w.R) > 0:
				for i := range w.L {
					for k := range w.R {
						emitPair(fx, shape, "window", ts, &w.L[i], &w.R[k], end)
					}
				}
			case len(w.R) == 0 && t.padLeft():
				for i := range w.L {
					emitPair(fx, shape, "window", ts, &w.L[i], nil, end)
				}
			case len(w.L) == 0 && t.padRight():
				for k := range w.R {
					emitPair(fx, shape, "window", ts, nil, &w.R[k], end)
				}
			}
		}
		return j
	}
	where := spec.Where
	j.where = &where
	j.fire = func(w *winState, fx *Effects) {
		ts, end := w.W.MaxTimestamp(), w.W.End
		matchedR := make([]bool, len(w.R))
		for i := range w.L {
			if t.semi() {
				for k := range w.R {
					if where.match(w.L[i].Row, w.R[k].Row) {
						emitPair(fx, shape, "window", ts, &w.L[i], nil, end)
						break
					}
				}
				continue
			}
			matched := false
			for k := range w.R {
				if where.match(w.L[i].Row, w.R[k].Row) {
					matched, matchedR[k] = true, true
					emitPair(fx, shape, "window", ts, &w.L[i], &w.R[k], end)
				}
			}
			if !matched && t.padLeft() {
				emitPair(fx, shape, "window", ts, &w.L[i], nil, end)
			}
		}
		if t.padRight() {
			for k := range w.R {
				if !matchedR[k] {
					emitPair(fx, shape, "window", ts, nil, &w.R[k], end)
				}
			}
		}
	}
	return j
}

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

type windowSnap struct {
	W []*winState `json:"w"`
}

// Snapshot encodes the state: TimedSnapshotVersion, 'W', then JSON of the
// windows in (end, start) order with their fired flags and buffers. Equal
// states encode to equal bytes. Rows must be JSON-encodable (Snapshot panics
// otherwise, a broken invariant). Timers are not in it: they are the timer
// service's, and follow from the windows.
func (j *Windowed) Snapshot() []byte {
	return encodeSnap('W', windowSnap{W: j.wins})
}

// Restore replaces the state with the one b encodes. On error (a wrapped
// ErrBadTimedSnapshot) the state is unchanged. Numbers are restored as
// json.Number.
func (j *Windowed) Restore(b []byte) error {
	var s windowSnap
	if err := decodeSnap(b, 'W', &s); err != nil {
		return err
	}
	for i, ws := range s.W {
		switch {
		case ws == nil:
			return fmt.Errorf("%w: window %d is null", ErrBadTimedSnapshot, i)
		case ws.W.Start >= ws.W.End:
			return fmt.Errorf("%w: window %v is empty", ErrBadTimedSnapshot, ws.W)
		case i > 0 && winLess(s.W[i-1].W, ws.W) >= 0:
			return fmt.Errorf("%w: windows out of order at %v", ErrBadTimedSnapshot, ws.W)
		case len(ws.L) == 0 && len(ws.R) == 0:
			return fmt.Errorf("%w: window %v holds no element", ErrBadTimedSnapshot, ws.W)
		case !validMatched(ws.LM, len(ws.L)) || !validMatched(ws.RM, len(ws.R)):
			return fmt.Errorf("%w: window %v: matched rows out of range or order", ErrBadTimedSnapshot, ws.W)
		}
	}
	if len(s.W) == 0 {
		s.W = nil
	}
	j.wins = s.W
	return nil
}

// validMatched reports whether m holds ascending, unique positions below n.
func validMatched(m []int, n int) bool {
	for i, p := range m {
		if p < 0 || p >= n || i > 0 && p <= m[i-1] {
			return false
		}
	}
	return true
}
