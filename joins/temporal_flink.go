package joins

import (
	"fmt"
	"math"
	"strconv"

	"github.com/joinery/joinery/record"
)

// LateNoRow: a probe without a row (a changelog probe must carry the row
// it adds or retracts).
const LateNoRow = "no-row"

// TemporalSemantics chooses the time and lateness rules of an event-time
// temporal join. The zero value is SemanticsStrict.
type TemporalSemantics int

const (
	// SemanticsStrict is Joinery's own rule (Temporal): an input of either
	// side behind the watermark is late, a probe at t is emitted once the
	// watermark passes t, in time order.
	SemanticsStrict TemporalSemantics = iota
	// SemanticsFlink is Flink's TemporalRowTimeJoinOperator exactly
	// (TemporalFlink): nothing is late, a probe at t is emitted at the first
	// firing with t <= watermark, probes in arrival order, and the probe's
	// row kind is the output's.
	SemanticsFlink
	// SemanticsKafka is Kafka Streams' KStream-KTable join: a table record
	// with a null value is a tombstone (it removes the version), a stream
	// record with a null value is dropped (LateNullValue), and in a left join
	// a stream record whose key (or join key) is null is emitted padded
	// with nulls instead of being dropped (KIP-962, Kafka Streams 3.7): the
	// caller routes it to NullKey, where no version ever is. The
	// processing-time join (NewTemporalLatest) joins the latest value, as
	// against a plain KTable; the event-time one (NewTemporalKafka) joins
	// the version valid at the record's time after a grace period, as
	// against a versioned KTable (KIP-914).
	SemanticsKafka
)

// NullKey is the key a caller gives a probe whose key is null in a left
// join with SemanticsKafka (KIP-962): no version is ever stored under it
// (a table record with a null key is dropped), so the probe is emitted
// padded. Callers must refuse it as a key of the versioned side.
const NullKey record.Key = "\x00null"

// LateNullValue: a probe of a SemanticsKafka join without a value, which
// Kafka Streams skips ("null join key or value").
const LateNullValue = "null-value"

// ParseTemporalSemantics parses "" or "strict" (SemanticsStrict), "flink"
// and "kafka".
func ParseTemporalSemantics(s string) (TemporalSemantics, error) {
	switch s {
	case "", "strict":
		return SemanticsStrict, nil
	case "flink":
		return SemanticsFlink, nil
	case "kafka":
		return SemanticsKafka, nil
	}
	return 0, fmt.Errorf("joins: unknown temporal semantics %q (want strict, flink or kafka)", s)
}

func (s TemporalSemantics) String() string {
	switch s {
	case SemanticsStrict:
		return "strict"
	case SemanticsFlink:
		return "flink"
	case SemanticsKafka:
		return "kafka"
	}
	return fmt.Sprintf("TemporalSemantics(%d)", int(s))
}

// NewTemporalJoin returns the empty state of one key of the event-time
// temporal join spec describes: a Temporal, a TemporalFlink when
// spec.Semantics is SemanticsFlink, or a TemporalKafka when it is
// SemanticsKafka (then spec.History must be > 0). spec must be valid.
func NewTemporalJoin(spec *TemporalSpec) Timed {
	switch spec.Semantics {
	case SemanticsFlink:
		return NewTemporalFlink(spec)
	case SemanticsKafka:
		return NewTemporalKafka(spec)
	}
	return NewTemporal(spec)
}

// NewTemporalFlink returns the empty state of one key of an event-time
// temporal join with Flink's semantics. spec must be valid.
func NewTemporalFlink(spec *TemporalSpec) *TemporalFlink {
	return &TemporalFlink{outer: spec.Type == TimedLeftOuter,
		shape: &pairShape{left: spec.Left, right: spec.Right, project: spec.Project}}
}

// TemporalFlink is the per-key state of an event-time temporal join that
// follows Flink's TemporalRowTimeJoinOperator (with its
// TemporalRowTimeJoinHelper) step for step. It implements Timed.
//
//   - Nothing is late. Every probe is buffered in arrival order, every
//     version is kept by its time (a later arrival at the same time replaces
//     it; an UpdateBefore or Delete, or a nil Row, is a version that joins
//     nothing).
//   - The key has one timer, at the smallest time of any element since the
//     last firing (Flink's registerSmallestTimer); an element older than the
//     watermark sets it in the past, so it fires at the next rise.
//   - A firing emits, in arrival order, every buffered probe with
//     t <= watermark, joined with the version of the greatest time <= t
//     among those still kept (none, or a delete: padded in a left join,
//     nothing in an inner one); the output is stamped t, with the probe's
//     row kind, id temporal|probePos|versionPos|t|0. It then drops every
//     version older than the newest one at or before the watermark (a delete
//     included), and sets the timer at the oldest probe left, if any. A late
//     probe thus joins the version valid at its time while that version is
//     still kept, and a late version joins the probes of the next firing.
//
// A TemporalFlink is not safe for concurrent use; it keeps the rows it is
// given and shares them with its outputs: treat them as read-only.
type TemporalFlink struct {
	outer    bool
	shape    *pairShape
	versions []kindElem // sorted by Ts, unique Ts; Row nil: joins nothing
	probes   []kindElem // arrival order
	timer    *int64     // the registered timer, nil when none
}

// kindElem is a buffered element with its row kind.
type kindElem struct {
	elem
	K record.Kind `json:"k,omitempty"`
}

func (j *TemporalFlink) register(ts int64, fx *Effects) {
	if j.timer != nil && *j.timer <= ts {
		return
	}
	if j.timer != nil {
		fx.DelTimers = append(fx.DelTimers, *j.timer)
	}
	j.timer = &ts
	fx.SetTimers = append(fx.SetTimers, ts)
}

// OnElement buffers a probe or keeps a version; nothing is late.
func (j *TemporalFlink) OnElement(e Element, watermark int64, fx *Effects) {
	switch e.Side {
	case record.Left:
		if e.Row == nil {
			fx.Late = append(fx.Late, Late{Element: e, Reason: LateNoRow})
			return
		}
		j.probes = append(j.probes, kindElem{elem: elemOf(e), K: e.Kind})
	case record.Right:
		v := kindElem{elem: elemOf(e), K: e.Kind}
		if e.Kind == record.UpdateBefore || e.Kind == record.Delete {
			v.Row = nil
		}
		i := firstAtLeastK(j.versions, e.Ts)
		if i < len(j.versions) && j.versions[i].Ts == e.Ts {
			j.versions[i] = v
		} else {
			j.versions = append(j.versions, kindElem{})
			copy(j.versions[i+1:], j.versions[i:])
			j.versions[i] = v
		}
	default:
		fx.Late = append(fx.Late, Late{Element: e, Reason: LateUnknownSide})
		return
	}
	j.register(e.Ts, fx)
}

// firstAtLeastK returns the index of the first version with Ts >= t.
func firstAtLeastK(es []kindElem, t int64) int {
	lo, hi := 0, len(es)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if es[m].Ts >= t {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// firstAboveK returns the index of the first version with Ts > t.
func firstAboveK(es []kindElem, t int64) int {
	if t == math.MaxInt64 {
		return len(es)
	}
	return firstAtLeastK(es, t+1)
}

// OnTimer is Flink's onEventTime: emit the probes at or before the
// watermark, in arrival order, then clean the versions up.
func (j *TemporalFlink) OnTimer(ts int64, watermark int64, fx *Effects) {
	j.timer = nil
	next := int64(math.MaxInt64)
	kept := j.probes[:0:0]
	for i := range j.probes {
		p := &j.probes[i]
		if p.Ts > watermark {
			kept = append(kept, *p)
			next = min(next, p.Ts)
			continue
		}
		n := len(fx.Out)
		if k := firstAboveK(j.versions, p.Ts); k > 0 && j.versions[k-1].Row != nil {
			emitPair(fx, j.shape, "temporal", p.Ts, &p.elem, &j.versions[k-1].elem, p.Ts)
		} else if j.outer {
			emitPair(fx, j.shape, "temporal", p.Ts, &p.elem, nil, p.Ts)
		}
		for o := n; o < len(fx.Out); o++ {
			fx.Out[o].Kind = p.K
		}
	}
	if len(kept) == 0 {
		kept = nil
	}
	j.probes = kept
	// Flink's firstIndexToKeep: the newest version at or before the
	// watermark and every newer one.
	if k := firstAboveK(j.versions, watermark); k > 1 {
		j.versions = append(j.versions[:0:0], j.versions[k-1:]...)
	}
	if next < math.MaxInt64 {
		j.register(next, fx)
	}
}

// Empty reports whether the key holds no version and no probe.
func (j *TemporalFlink) Empty() bool { return len(j.versions) == 0 && len(j.probes) == 0 }

type temporalFlinkSnap struct {
	V  []kindElem `json:"v"`
	P  []kindElem `json:"p"`
	Tm *int64     `json:"tm,omitempty"`
}

// Snapshot encodes the state: TimedSnapshotVersion, 'F', then JSON of the
// versions (a version that joins nothing has "r":null), the pending probes
// in arrival order (row kinds other than +I as "k") and the registered
// timer. Equal states encode to equal bytes. The bytes are
// snapshotReflect's, written from the elements' cached JSON: a version or
// probe is never changed in place once buffered (a version at a time
// already kept replaces the whole element; a firing copies the probes it
// keeps), and the cache holds only the embedded elem's JSON, not "k".
func (j *TemporalFlink) Snapshot() []byte {
	size := snapSize(snapSize(32, j.versions, kindElemEnc), j.probes, kindElemEnc)
	return fastSnap('F', size, func(b []byte) ([]byte, bool) {
		b, ok := appendSides(b, "v", "p", j.versions, j.probes, appendKindElem)
		if ok && j.timer != nil { // omitempty
			b = append(strconv.AppendInt(reopen(b, "tm"), *j.timer, 10), '}')
		}
		return b, ok
	}, j.snapshotReflect)
}

// snapshotReflect is Snapshot by encoding/json's reflection: the
// fallback, and what tests compare Snapshot with.
func (j *TemporalFlink) snapshotReflect() []byte { return encodeSnap('F', j.snap()) }

func (j *TemporalFlink) snap() any {
	return temporalFlinkSnap{V: j.versions, P: j.probes, Tm: j.timer}
}

// Restore replaces the state with the one b encodes; on error (a wrapped
// ErrBadTimedSnapshot) the state is unchanged.
func (j *TemporalFlink) Restore(b []byte) error {
	var s temporalFlinkSnap
	if err := decodeSnap(b, 'F', &s); err != nil {
		return err
	}
	for i := 1; i < len(s.V); i++ {
		if s.V[i].Ts <= s.V[i-1].Ts {
			return fmt.Errorf("%w: versions not strictly ordered by time", ErrBadTimedSnapshot)
		}
	}
	for _, p := range s.P {
		if p.Row == nil {
			return fmt.Errorf("%w: probe at %d has no row", ErrBadTimedSnapshot, p.Ts)
		}
	}
	if len(s.P) > 0 && s.Tm == nil {
		return fmt.Errorf("%w: probes without a timer", ErrBadTimedSnapshot)
	}
	j.versions, j.probes, j.timer = s.V, s.P, s.Tm
	if len(j.versions) == 0 {
		j.versions = nil
	}
	if len(j.probes) == 0 {
		j.probes = nil
	}
	return nil
}

var _ Timed = (*TemporalFlink)(nil)
