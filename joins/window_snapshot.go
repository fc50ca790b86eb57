package joins

import (
	"fmt"
)

type windowSnap struct {
	W []*winState `json:"w"`
}

// Snapshot encodes the state: TimedSnapshotVersion, 'W', then JSON of the
// windows in (end, start) order with their fired flags and buffers. Equal
// states encode to equal bytes. Rows must be JSON-encodable (Snapshot panics
// otherwise, a broken invariant). Timers are not in it: they are the timer
// service's, and follow from the windows. The bytes are snapshotReflect's,
// written by hand from the elements' cached JSON (eventtime_snapshot.go);
// not with overlapping sliding windows, where an element is copied into
// each of its windows and every copy would cache its own JSON.
func (j *Windowed) Snapshot() []byte {
	one := appendElem
	if a := j.assigner; a.Kind == SlidingWindows && a.Size > a.Slide {
		one = appendElemUncached
	}
	size := 16
	for _, w := range j.wins {
		if w == nil { // never in a live state; encoded as null all the same
			continue
		}
		size = snapSize(snapSize(size+128+8*(len(w.LM)+len(w.RM)), w.L, elemEnc), w.R, elemEnc)
	}
	return fastSnap('W', size, func(b []byte) ([]byte, bool) {
		b = append(b, `{"w":`...)
		b, ok := appendList(b, j.wins, func(b []byte, w **winState) ([]byte, bool) { return appendWinState(b, w, one) })
		return append(b, '}'), ok
	}, j.snapshotReflect)
}

// snapshotReflect is Snapshot by encoding/json's reflection: the fallback,
// and what tests compare Snapshot with.
func (j *Windowed) snapshotReflect() []byte { return encodeSnap('W', windowSnap{W: j.wins}) }

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
