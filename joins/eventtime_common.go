package joins

// Shared pieces of the event-time joins (window, coGroup, interval,
// time-bounded outer, temporal): the join type, output rows, output ids and
// the snapshot envelope.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/record"
)

// TimedJoinType is the kind of an event-time join. The zero value is
// TimedInner. It is its own type because event-time joins also have a right
// outer variant, which the changelog join's JoinType lacks.
type TimedJoinType int

const (
	// TimedInner emits matched pairs only.
	TimedInner TimedJoinType = iota
	// TimedLeftOuter also emits an unmatched left row padded with nulls.
	TimedLeftOuter
	// TimedRightOuter also emits an unmatched right row padded with nulls.
	TimedRightOuter
	// TimedFullOuter pads unmatched rows of both sides.
	TimedFullOuter
	// TimedLeftSemi is a left semi join (Spark's left_semi): each left row
	// that matches is emitted once, alone (its row only, never padded), as
	// soon as its first match is there; a left row that never matches is
	// never emitted, and a right row is never emitted.
	TimedLeftSemi
)

var timedJoinTypeNames = [...]string{"inner", "left", "right", "full", "semi"}

func (t TimedJoinType) String() string {
	if t.valid() {
		return timedJoinTypeNames[t]
	}
	return fmt.Sprintf("TimedJoinType(%d)", int(t))
}

// ParseTimedJoinType parses "inner", "left", "right", "full" or "semi".
func ParseTimedJoinType(s string) (TimedJoinType, error) {
	for i, n := range timedJoinTypeNames {
		if n == s {
			return TimedJoinType(i), nil
		}
	}
	return 0, fmt.Errorf("joins: unknown join type %q (want inner, left, right, full or semi)", s)
}

func (t TimedJoinType) valid() bool { return t >= TimedInner && t <= TimedLeftSemi }

// semi reports whether the join is a left semi join.
func (t TimedJoinType) semi() bool { return t == TimedLeftSemi }

// padLeft reports whether an unmatched left row is emitted with nulls.
func (t TimedJoinType) padLeft() bool { return t == TimedLeftOuter || t == TimedFullOuter }

// padRight reports whether an unmatched right row is emitted with nulls.
func (t TimedJoinType) padRight() bool { return t == TimedRightOuter || t == TimedFullOuter }

// JoinFunc makes the output row of one joined pair (Flink's JoinFunction).
// For a null-padded outer row the missing side is nil. It must be pure.
type JoinFunc func(l, r record.Row) record.Row

// FlatJoinFunc makes zero or more output rows of one joined pair (Flink's
// FlatJoinFunction). For a null-padded outer row the missing side is nil. It
// must be pure.
type FlatJoinFunc func(l, r record.Row) []record.Row

// pairShape turns a joined pair into output rows: the functions if set, else
// the projection, else {left: l, right: r}.
type pairShape struct {
	left, right string
	project     []Column
	join        JoinFunc
	flat        FlatJoinFunc
	// semi: a left semi join's output, the left row alone ({left: l}
	// without a projection).
	semi bool
}

// rows returns the output rows of the pair (l or r nil when padded).
func (p *pairShape) rows(l, r record.Row) []record.Row {
	switch {
	case p.flat != nil:
		return p.flat(l, r)
	case p.join != nil:
		return []record.Row{p.join(l, r)}
	case p.semi && len(p.project) == 0:
		return []record.Row{{p.left: rowValue(l)}}
	}
	return []record.Row{projectPair(p.left, p.right, p.project, l, r)}
}

// projectPair is the output row of a pair: {left: l, right: r} (a nil side
// is an untyped null) or, with a projection, Name = Side's row[Field].
func projectPair(left, right string, project []Column, l, r record.Row) record.Row {
	if len(project) == 0 {
		return record.Row{left: rowValue(l), right: rowValue(r)}
	}
	row := make(record.Row, len(project))
	for _, c := range project {
		if c.Compute != nil {
			row[c.Name] = c.Compute(l, r)
			continue
		}
		src := l
		if c.Side == record.Right {
			src = r
		}
		var v any
		if src != nil {
			v = src[c.Field]
		}
		row[c.Name] = v
	}
	return row
}

// validateSemi checks what a left semi join allows: its output is the left
// row, so a projection names left columns only.
func validateSemi(c *collector, t TimedJoinType, project []Column) {
	if !t.semi() {
		return
	}
	for i, col := range project {
		if col.Compute == nil && col.Side == record.Right {
			c.bad(fmt.Sprintf("project[%d].side", i), "a left semi join outputs the left row only: a right column is never there")
		}
	}
}

// checkProject checks the output columns of a two-sided join
// (checkColumns), each not computed taken from the left or right row.
func checkProject(bad func(field, format string, args ...any), project []Column) {
	checkColumns(bad, project, func(f string, c Column) {
		if c.Side != record.Left && c.Side != record.Right {
			bad(f+".side", "must be left or right, got %d", c.Side)
		}
	})
}

// outputColumn is an output column of a join's projection (Column,
// MultiColumn): its name, the input field it copies, and whether it is
// computed instead.
type outputColumn interface {
	column() (name, field string, computed bool)
}

func (c Column) column() (string, string, bool)      { return c.Name, c.Field, c.Compute != nil }
func (c MultiColumn) column() (string, string, bool) { return c.Name, c.Field, c.Compute != nil }

// checkColumns checks output columns: each named once, and each either
// computed or a field of an input row, which source checks (the side or
// table) at the column's field name f.
func checkColumns[C outputColumn](bad func(field, format string, args ...any), project []C, source func(f string, c C)) {
	seen := make(map[string]int, len(project))
	for i, c := range project {
		f := fmt.Sprintf("project[%d]", i)
		name, field, computed := c.column()
		if name == "" {
			bad(f+".name", "must not be empty")
		} else if j, dup := seen[name]; dup {
			bad(f+".name", "duplicate %q (also project[%d])", name, j)
		} else {
			seen[name] = i
		}
		if computed {
			continue
		}
		source(f, c)
		if field == "" {
			bad(f+".field", "must not be empty")
		}
	}
}

// validateShape checks the output description shared by the event-time
// join specs: side names, the projection and the pair functions.
func validateShape(bad func(field, format string, args ...any), left, right string, project []Column, join JoinFunc, flat FlatJoinFunc) {
	if join != nil && flat != nil {
		bad("flat_join", "must not be set together with join")
	}
	if len(project) > 0 && (join != nil || flat != nil) {
		bad("project", "must be empty when join or flat_join makes the rows")
	}
	if len(project) == 0 && join == nil && flat == nil {
		if left == "" {
			bad("left", "must not be empty (it names the left row's output column)")
		}
		if right == "" {
			bad("right", "must not be empty (it names the right row's output column)")
		}
		if left != "" && left == right {
			bad("right", "must differ from left %q when there is no projection", left)
		}
	}
	checkProject(bad, project)
}

// collector gathers the problems of a Validate call.
type collector struct{ errs []error }

func (c *collector) bad(field, format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%s: "+format, append([]any{field}, args...)...))
}

func (c *collector) err() error { return errors.Join(c.errs...) }

// elem is a buffered element: its event time, position and row.
type elem struct {
	Ts  int64           `json:"t"`
	Pos record.Position `json:"p"`
	Row record.Row      `json:"r"`
	// enc is the element's JSON, {"t":..,"p":..,"r":..}, cached by the
	// first snapshot that writes it (appendElem): an element is never
	// modified once buffered — joins replace a whole elem (and with it
	// its cache), never its Ts, Pos or Row in place. Copies share it.
	enc []byte
}

func elemOf(e Element) elem { return elem{Ts: e.Ts, Pos: e.Pos, Row: e.Row} }

// Output ids and primary keys of the event-time joins.
//
// An output is made by at most one left and one right element (a coGroup
// output by a window's lists, named by the first element of each) plus a
// discriminator (the window end, or the output's event time) and n, its index
// among the rows a function made for the same inputs. The id is the readable
//
//	kind|leftPos|rightPos|extra|n    e.g. window|orange/0@2|green/0@3|3|0
//
// with "-" for an absent side, and the PK is the same tuple as a JSON array,
// ["orange/0@2","green/0@3",3,0], with null for an absent side. Both depend
// only on the inputs, so a replay (or a late re-firing of a window) gives the
// same ids. Ids are unique as long as a source position holds one element of
// one key, which is how sources and keyBy deliver them.
func outputID(kind string, l, r *record.Position, extra int64, n int) (id, pk string) {
	var ib, pb strings.Builder
	ib.WriteString(kind)
	pb.WriteByte('[')
	for i, p := range [2]*record.Position{l, r} {
		ib.WriteByte('|')
		if i > 0 {
			pb.WriteByte(',')
		}
		if p == nil {
			ib.WriteByte('-')
			pb.WriteString("null")
			continue
		}
		s := p.String()
		ib.WriteString(s)
		pb.WriteString(strconv.Quote(s))
	}
	x, ns := strconv.FormatInt(extra, 10), strconv.Itoa(n)
	ib.WriteString("|" + x + "|" + ns)
	pb.WriteString("," + x + "," + ns + "]")
	return ib.String(), pb.String()
}

// emitPair appends the outputs of one pair (l or r nil when padded), stamped
// ts, to fx.
func emitPair(fx *Effects, shape *pairShape, kind string, ts int64, l, r *elem, extra int64) {
	var lr, rr record.Row
	var lp, rp *record.Position
	if l != nil {
		lr, lp = l.Row, &l.Pos
	}
	if r != nil {
		rr, rp = r.Row, &r.Pos
	}
	for n, row := range shape.rows(lr, rr) {
		id, pk := outputID(kind, lp, rp, extra, n)
		fx.Out = append(fx.Out, record.Output{ID: id, Kind: record.Insert, PK: pk, Row: row, Ts: ts})
	}
}

// emitSemi appends the output of a left semi join's matched left row l,
// stamped with its own time: its row alone, id semi|leftPos|-|l.ts|n.
func emitSemi(fx *Effects, shape *pairShape, l *elem) {
	emitPair(fx, shape, "semi", l.Ts, l, nil, l.Ts)
}

// Late reasons.
const (
	// LateWindowClosed: every window of the element is past the watermark
	// plus the allowed lateness.
	LateWindowClosed = "window-closed"
	// LateBehindWatermark: the element's time is below the watermark.
	LateBehindWatermark = "behind-watermark"
	// LateUnknownSide: the element's side is neither left nor right.
	LateUnknownSide = "unknown-side"
	// LateOutOfOrder: a changelog join's change of a versioned side
	// (SideSpec.Versioned) older than the row's last change.
	LateOutOfOrder = "out-of-order"
)

// addSat adds with saturation at the int64 bounds, so that times near the
// ends of the range never wrap around.
func addSat(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// subSat subtracts with saturation.
func subSat(a, b int64) int64 {
	if b == math.MinInt64 {
		return addSat(addSat(a, math.MaxInt64), 1)
	}
	return addSat(a, -b)
}

// Snapshot envelope of the event-time joins: TimedSnapshotVersion, a byte
// naming the join ('W' window and coGroup, 'I' interval, 'O' time-bounded,
// 'T' temporal, 'P' processing-time temporal), then JSON. encoding/json
// writes struct fields in order and sorts map keys, so equal states encode
// to equal bytes.

// TimedSnapshotVersion is the first byte of every event-time join snapshot.
const TimedSnapshotVersion byte = 1

// ErrBadTimedSnapshot is wrapped by every error an event-time join's Restore
// returns.
var ErrBadTimedSnapshot = errors.New("joins: bad event-time join snapshot")

func encodeSnap(kind byte, v any) []byte {
	b, err := jsonenc.AppendMarshal([]byte{TimedSnapshotVersion, kind}, v)
	if err != nil {
		panic(fmt.Sprintf("joins: event-time join state is not JSON-encodable: %v", err))
	}
	return b
}

func decodeSnap(b []byte, kind byte, v any) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty", ErrBadTimedSnapshot)
	}
	if b[0] != TimedSnapshotVersion {
		return fmt.Errorf("%w: unknown version %d (want %d)", ErrBadTimedSnapshot, b[0], TimedSnapshotVersion)
	}
	if len(b) < 2 || b[1] != kind {
		return fmt.Errorf("%w: not a %q join snapshot", ErrBadTimedSnapshot, kind)
	}
	dec := json.NewDecoder(bytes.NewReader(b[2:]))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadTimedSnapshot, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: trailing data after the state", ErrBadTimedSnapshot)
	}
	return nil
}

// sortedByTs reports whether es is sorted by event time.
func sortedByTs(es []elem) bool {
	for i := 1; i < len(es); i++ {
		if es[i].Ts < es[i-1].Ts {
			return false
		}
	}
	return true
}

// insertByTs inserts e after every element with a time <= e.Ts, so equal
// times keep arrival order, and returns the extended slice.
func insertByTs(es []elem, e elem) []elem {
	i := len(es)
	for i > 0 && es[i-1].Ts > e.Ts {
		i--
	}
	es = append(es, elem{})
	copy(es[i+1:], es[i:])
	es[i] = e
	return es
}

// firstAbove returns the index of the first element with Ts > t (es sorted).
func firstAbove(es []elem, t int64) int {
	lo, hi := 0, len(es)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if es[m].Ts > t {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// firstAtLeast returns the index of the first element with Ts >= t.
func firstAtLeast(es []elem, t int64) int {
	if t == math.MinInt64 {
		return 0
	}
	return firstAbove(es, t-1)
}

// Every event-time join state implements Timed.
var (
	_ Timed = (*Windowed)(nil)
	_ Timed = (*Interval)(nil)
	_ Timed = (*TimeBounded)(nil) // and NewUnbounded
	_ Timed = (*Temporal)(nil)
	_ Timed = (*TemporalLatest)(nil)
)
