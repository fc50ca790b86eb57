package joins

import (
	"fmt"

	"github.com/joinery/joinery/record"
)

// TemporalSpec describes a temporal (as-of) join, Flink's temporal table
// join (seed dynamic-joiner-watermarks: "the latest ad as of the visit's
// event_time"). The left side is the probe stream; the right side is the
// versioned (build) side: each right element is a version of the key's row
// valid from its time on, and a right element with a nil Row is a delete at
// its time (it ends the version before it). At equal version times the later
// arrival wins.
//
// A probe at time t joins the version with the greatest version time <= t,
// unless a delete is the latest entry at or before t. Type is TimedInner (no
// version: nothing) or TimedLeftOuter (no version: the probe padded with
// nulls).
//
// It is a plain value: fill it, call Validate, then share a pointer to it,
// read-only, among all keys' joins.
type TemporalSpec struct {
	Type TimedJoinType
	// Left (probe) and Right (versioned) name the sides; without Project the
	// output row is {Left: probe row, Right: version row or null}.
	Left, Right string
	Project     []Column
	// Semantics is SemanticsStrict (the default: NewTemporal),
	// SemanticsFlink (NewTemporalFlink) or SemanticsKafka
	// (NewTemporalKafka). NewTemporalJoin picks by it; the processing-time
	// join (NewTemporalLatest) takes its null rules from SemanticsKafka and
	// its row kinds from every semantics.
	Semantics TemporalSemantics
	// Grace and History (ms, SemanticsKafka only) are the versioned
	// KStream-KTable join's grace period (Joined.withGracePeriod: how long a
	// stream record waits for out-of-order table records) and the versioned
	// store's history retention (how far back versions are kept): 0 <=
	// Grace <= History. NewTemporalKafka needs History > 0.
	Grace, History int64
}

// Validate reports every problem of the spec, joined, each naming its field.
func (s *TemporalSpec) Validate() error {
	if s == nil {
		return fmt.Errorf("joins: nil temporal join spec")
	}
	var c collector
	if s.Type != TimedInner && s.Type != TimedLeftOuter {
		c.bad("type", "must be inner or left for a temporal join, got %v", s.Type)
	}
	if s.Semantics != SemanticsStrict && s.Semantics != SemanticsFlink && s.Semantics != SemanticsKafka {
		c.bad("semantics", "must be strict, flink or kafka, got %v", s.Semantics)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"grace", s.Grace}, {"history", s.History}} {
		switch {
		case f.v != 0 && s.Semantics != SemanticsKafka:
			c.bad(f.name, "only for semantics kafka (Kafka Streams' versioned table join), got semantics %v", s.Semantics)
		case f.v < 0:
			c.bad(f.name, "must not be negative, got %d ms", f.v)
		}
	}
	if s.Grace > s.History && s.History > 0 {
		c.bad("grace", "must not exceed history (%d ms > %d ms), as Kafka Streams requires of a grace period", s.Grace, s.History)
	}
	validateShape(c.bad, s.Left, s.Right, s.Project, nil, nil)
	return c.err()
}

// NewTemporal returns the empty state of one key of an event-time temporal
// join. spec must be valid and must not change while the join is in use.
func NewTemporal(spec *TemporalSpec) *Temporal {
	return &Temporal{outer: spec.Type == TimedLeftOuter,
		shape: &pairShape{left: spec.Left, right: spec.Right, project: spec.Project}}
}

// Temporal is the per-key state of an event-time temporal join: the
// versions (and deletes) sorted by version time, and the probes waiting for
// the watermark, sorted by time (arrival order among equal times). It
// implements Timed.
//
//   - Either side's element below the watermark on arrival is Late
//     (LateBehindWatermark): a version that old could change results already
//     emitted.
//   - A probe at t is emitted once the watermark passes t (timer t+1): an
//     element at exactly the watermark is still on time and may be a version
//     at t. Output +I stamped t, id temporal|probePos|versionPos|t|0 (versionPos
//     "-" when padded).
//   - Versions no probe can reach any more are dropped: every pending or
//     future probe is at or after the watermark, so a version older than the
//     newest version at or before it is useless, as is a delete with nothing
//     before it. Pruning runs at a timer set at the time of each new version
//     that has an older entry and of each delete.
//
// A Temporal is not safe for concurrent use; it keeps the rows it is given
// and shares them with its outputs: treat them as read-only.
type Temporal struct {
	outer    bool
	shape    *pairShape
	versions []elem // sorted by Ts, unique Ts; Row nil: a delete
	probes   []elem
}

// OnElement buffers a probe or applies a version.
func (j *Temporal) OnElement(e Element, watermark int64, fx *Effects) {
	switch {
	case e.Side != record.Left && e.Side != record.Right:
		fx.Late = append(fx.Late, Late{Element: e, Reason: LateUnknownSide})
		return
	case e.Ts < watermark:
		fx.Late = append(fx.Late, Late{Element: e, Reason: LateBehindWatermark})
		return
	}
	el := elemOf(e)
	if e.Side == record.Right && (e.Kind == record.UpdateBefore || e.Kind == record.Delete) {
		el.Row = nil // a changelog's retraction ends the version, as a nil Row does
	}
	if e.Side == record.Left {
		i := firstAtLeast(j.probes, e.Ts)
		if i == len(j.probes) || j.probes[i].Ts != e.Ts {
			fx.SetTimers = append(fx.SetTimers, addSat(e.Ts, 1))
		}
		j.probes = insertByTs(j.probes, el)
		return
	}
	i := firstAtLeast(j.versions, e.Ts)
	if i < len(j.versions) && j.versions[i].Ts == e.Ts {
		j.versions[i] = el // the later arrival wins
	} else {
		j.versions = insertByTs(j.versions, el)
	}
	if i > 0 || el.Row == nil {
		fx.SetTimers = append(fx.SetTimers, e.Ts) // prune then
	}
}

// dropLeadingDeletes drops the deletes at or before ts that no version
// precedes: they answer as "no version" does, and no version older than them
// can arrive any more.
func (j *Temporal) dropLeadingDeletes(ts int64) {
	n := 0
	for n < len(j.versions) && j.versions[n].Row == nil && j.versions[n].Ts <= ts {
		n++
	}
	j.versions = trim(j.versions, n)
}

// versionAt returns the version valid at t, nil when none is.
func (j *Temporal) versionAt(t int64) *elem {
	i := firstAbove(j.versions, t)
	if i == 0 || j.versions[i-1].Row == nil {
		return nil
	}
	return &j.versions[i-1]
}

// OnTimer emits, in time order, the probes with t < ts (the watermark has
// passed them), then drops the versions older than the newest one at or
// before ts.
func (j *Temporal) OnTimer(ts int64, watermark int64, fx *Effects) {
	n := 0
	for ; n < len(j.probes) && j.probes[n].Ts < ts; n++ {
		p := &j.probes[n]
		if v := j.versionAt(p.Ts); v != nil {
			emitPair(fx, j.shape, "temporal", p.Ts, p, v, p.Ts)
		} else if j.outer {
			emitPair(fx, j.shape, "temporal", p.Ts, p, nil, p.Ts)
		}
	}
	j.probes = trim(j.probes, n)
	if i := firstAbove(j.versions, ts); i > 1 {
		j.versions = trim(j.versions, i-1)
	}
	j.dropLeadingDeletes(ts)
}

// Empty reports whether the key holds no version and no probe.
func (j *Temporal) Empty() bool { return len(j.versions) == 0 && len(j.probes) == 0 }

type temporalSnap struct {
	V []elem `json:"v"`
	P []elem `json:"p"`
}

// Snapshot encodes the state: TimedSnapshotVersion, 'T', then JSON of the
// versions (a delete has "r":null) and the pending probes. Equal states
// encode to equal bytes. The bytes are snapshotReflect's, written from the
// elements' cached JSON.
func (j *Temporal) Snapshot() []byte {
	return temporalSnapshot('T', j.versions, j.probes, j.snapshotReflect)
}

// snapshotReflect is Snapshot by encoding/json's reflection: the
// fallback, and what tests compare Snapshot with.
func (j *Temporal) snapshotReflect() []byte {
	return encodeSnap('T', temporalSnap{V: j.versions, P: j.probes})
}

// temporalSnapshot encodes a temporalSnap of kind from the elements'
// cached JSON (Temporal, TemporalKafka); slow is the join's
// snapshotReflect.
func temporalSnapshot(kind byte, versions, probes []elem, slow func() []byte) []byte {
	return fastSnap(kind, snapSize(snapSize(16, versions, elemEnc), probes, elemEnc), func(b []byte) ([]byte, bool) {
		return appendSides(b, "v", "p", versions, probes, appendElem)
	}, slow)
}

// Restore replaces the state with the one b encodes; on error (a wrapped
// ErrBadTimedSnapshot) the state is unchanged.
func (j *Temporal) Restore(b []byte) error {
	v, p, err := decodeTemporalSnap(b, 'T')
	if err != nil {
		return err
	}
	j.versions, j.probes = v, p
	return nil
}

// decodeTemporalSnap decodes and checks a temporalSnap of the given kind:
// versions strictly ordered by time, probes sorted, every probe with a
// row; empty lists come back nil.
func decodeTemporalSnap(b []byte, kind byte) (versions, probes []elem, err error) {
	var s temporalSnap
	if err := decodeSnap(b, kind, &s); err != nil {
		return nil, nil, err
	}
	for i := 1; i < len(s.V); i++ {
		if s.V[i].Ts <= s.V[i-1].Ts {
			return nil, nil, fmt.Errorf("%w: versions not strictly ordered by time", ErrBadTimedSnapshot)
		}
	}
	if !sortedByTs(s.P) {
		return nil, nil, fmt.Errorf("%w: probes not sorted by time", ErrBadTimedSnapshot)
	}
	for _, p := range s.P {
		if p.Row == nil {
			return nil, nil, fmt.Errorf("%w: probe at %d has no row", ErrBadTimedSnapshot, p.Ts)
		}
	}
	return trim(s.V, 0), trim(s.P, 0), nil
}

// NewTemporalLatest returns the empty state of one key of a processing-time
// temporal join (Flink's lookup-style join against the latest version): a
// probe joins the version that is current when it arrives and is emitted at
// once, stamped with its own time, with the probe's row kind (Insert for an
// append-only probe side), id temporal-latest|probePos|versionPos|
// probe ts|0. A right element replaces the version (a nil Row, an
// UpdateBefore or a Delete removes it).
// Nothing is ever late and no timer is used. With SemanticsKafka (Kafka
// Streams' KStream-KTable join) a probe with a nil Row is dropped
// (LateNullValue), and a probe at NullKey — a null key, which the caller
// routes there in a left join (KIP-962) — finds no version and comes out
// padded. spec must be valid.
func NewTemporalLatest(spec *TemporalSpec) *TemporalLatest {
	return &TemporalLatest{outer: spec.Type == TimedLeftOuter, kafka: spec.Semantics == SemanticsKafka,
		shape: &pairShape{left: spec.Left, right: spec.Right, project: spec.Project}}
}

// TemporalLatest is the per-key state of a processing-time temporal join:
// the latest version, if any. It implements Timed. It is not safe for
// concurrent use.
type TemporalLatest struct {
	outer  bool
	kafka  bool
	shape  *pairShape
	latest *elem
}

// OnElement replaces the version or joins a probe with it.
func (j *TemporalLatest) OnElement(e Element, watermark int64, fx *Effects) {
	switch e.Side {
	case record.Left:
		if j.kafka && e.Row == nil {
			fx.Late = append(fx.Late, Late{Element: e, Reason: LateNullValue})
			return
		}
		p := elemOf(e)
		n := len(fx.Out)
		if j.latest != nil {
			emitPair(fx, j.shape, "temporal-latest", e.Ts, &p, j.latest, e.Ts)
		} else if j.outer {
			emitPair(fx, j.shape, "temporal-latest", e.Ts, &p, nil, e.Ts)
		}
		for o := n; o < len(fx.Out); o++ {
			fx.Out[o].Kind = e.Kind // Flink's TemporalProcessTimeJoinOperator keeps the probe's row kind
		}
	case record.Right:
		if e.Row == nil || e.Kind == record.UpdateBefore || e.Kind == record.Delete {
			j.latest = nil
			return
		}
		v := elemOf(e)
		j.latest = &v
	default:
		fx.Late = append(fx.Late, Late{Element: e, Reason: LateUnknownSide})
	}
}

// OnTimer does nothing: the join uses no timer.
func (j *TemporalLatest) OnTimer(ts int64, watermark int64, fx *Effects) {}

// Empty reports whether there is no current version.
func (j *TemporalLatest) Empty() bool { return j.latest == nil }

type latestSnap struct {
	V *elem `json:"v"`
}

// Snapshot encodes the state: TimedSnapshotVersion, 'P', then JSON of the
// current version (null when none). The bytes are snapshotReflect's,
// written from the version's cached JSON: a key's state is written at
// every probe too, and a new version replaces the element (j.latest
// points to a fresh one), never changes it in place.
func (j *TemporalLatest) Snapshot() []byte {
	size := 16
	if j.latest != nil {
		size += elemSize(j.latest.enc)
	}
	return fastSnap('P', size, func(b []byte) ([]byte, bool) {
		b = append(b, `{"v":`...)
		if j.latest == nil {
			return append(b, "null}"...), true
		}
		b, ok := appendElem(b, j.latest)
		return append(b, '}'), ok
	}, j.snapshotReflect)
}

// snapshotReflect is Snapshot by encoding/json's reflection: the
// fallback, and what tests compare Snapshot with.
func (j *TemporalLatest) snapshotReflect() []byte { return encodeSnap('P', j.snap()) }

func (j *TemporalLatest) snap() any { return latestSnap{V: j.latest} }

// Restore replaces the state with the one b encodes; on error (a wrapped
// ErrBadTimedSnapshot) the state is unchanged.
func (j *TemporalLatest) Restore(b []byte) error {
	var s latestSnap
	if err := decodeSnap(b, 'P', &s); err != nil {
		return err
	}
	if s.V != nil && s.V.Row == nil {
		return fmt.Errorf("%w: version without a row", ErrBadTimedSnapshot)
	}
	j.latest = s.V
	return nil
}
