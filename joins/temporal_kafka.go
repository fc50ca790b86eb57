package joins

import (
	"math"

	"github.com/joinery/joinery/record"
)

// LateBehindHistory: an input of the versioned Kafka Streams join
// (TemporalKafka) older than the watermark minus the history retention: a
// version that old, which Kafka Streams' versioned store refuses to put, or,
// in an inner join, a stream record that old that finds no version (a left
// join pads it instead, as Kafka Streams does).
const LateBehindHistory = "behind-history"

// NewTemporalKafka returns the empty state of one key of Kafka Streams'
// KStream-KTable join against a versioned table (KIP-914, Kafka Streams
// 3.5+, with Joined.withGracePeriod(spec.Grace) and the store's history
// retention spec.History). spec must be valid, with SemanticsKafka and
// History > 0.
func NewTemporalKafka(spec *TemporalSpec) *TemporalKafka {
	return &TemporalKafka{outer: spec.Type == TimedLeftOuter, grace: spec.Grace, history: spec.History,
		shape: &pairShape{left: spec.Left, right: spec.Right, project: spec.Project}}
}

// TemporalKafka is the per-key state of the versioned KStream-KTable join:
// the table's versions (and tombstones) by time, and the stream records
// buffered for the grace period. It implements Timed.
//
// Kafka Streams' stream time (its grace buffer's: the largest timestamp of
// the stream records it has been given, so not of a null-value record it
// drops) is the watermark here: replay takes {"watermark": stream time}
// after each stream record the join keeps; a node's watermark is its
// sources' (with max_out_of_orderness 0, stream time - 1). With W the watermark before an
// input, G the grace and H the history retention:
//
//   - A stream (left) record at t with t + G <= W is joined at once (Kafka
//     Streams' buffer refuses it, or puts and evicts it at once); otherwise
//     it is buffered and emitted once the watermark reaches t + G (timer
//     t + G), in (time, arrival) order, as the buffer evicts records whose
//     time is at or below stream time - grace. Either way it joins the
//     version valid at t: the table record of the greatest time <= t, none
//     when that is a tombstone or there is none (a left join pads it, an
//     inner one emits nothing). The output is stamped t with id
//     temporal|probePos|versionPos|t|0.
//   - A stream record that arrives at t < W - H is behind the history: it
//     joins the key's latest version if that one is valid at t (Kafka
//     Streams' versioned store never expires its latest value), else finds
//     none: padded in a left join, reported late (LateBehindHistory) in an
//     inner one. A buffered record is never behind it: it joins the version
//     valid at t however far the watermark jumped (to the end of time when
//     the input ends), as Kafka Streams measures the history against the
//     table's stream time, which a stream record does not move. One without
//     a row is dropped (LateNullValue), as Kafka Streams skips a null value.
//   - A table (right) record at t is kept as the version from t (a later
//     arrival at the same t replaces it), out of order or not, unless
//     t < W - H (late, LateBehindHistory: the store refuses it). A nil Row,
//     an UpdateBefore or a Delete is a tombstone: no version from t.
//   - Versions no stream record can reach are dropped: once the watermark
//     passes v + H for an entry v that has an older one (or is a
//     tombstone), every entry older than the newest one at or before W - H
//     goes, and so does a tombstone with nothing before it (timer v + H). The
//     newest version is kept however old, as the versioned store keeps its
//     latest value.
//
// Kafka Streams measures the history against the table's own stream time;
// here it is the watermark, the join's one. A TemporalKafka is not safe for
// concurrent use; it keeps the rows it is given and shares them with its
// outputs: treat them as read-only.
type TemporalKafka struct {
	outer          bool
	grace, history int64
	shape          *pairShape
	versions       []elem // sorted by Ts, unique Ts; Row nil: a tombstone
	probes         []elem // sorted by Ts, arrival order among equal times
}

// OnElement joins or buffers a stream record, or keeps a version.
func (j *TemporalKafka) OnElement(e Element, watermark int64, fx *Effects) {
	horizon := subSat(watermark, j.history)
	switch e.Side {
	case record.Left:
		switch {
		case e.Row == nil:
			fx.Late = append(fx.Late, Late{Element: e, Reason: LateNullValue})
		case addSat(e.Ts, j.grace) <= watermark:
			p := elemOf(e)
			j.emit(fx, &p, horizon)
		default:
			i := firstAtLeast(j.probes, e.Ts)
			if i == len(j.probes) || j.probes[i].Ts != e.Ts {
				fx.SetTimers = append(fx.SetTimers, addSat(e.Ts, j.grace))
			}
			j.probes = insertByTs(j.probes, elemOf(e))
		}
	case record.Right:
		if e.Ts < horizon {
			fx.Late = append(fx.Late, Late{Element: e, Reason: LateBehindHistory})
			return
		}
		v := elemOf(e)
		if e.Kind == record.UpdateBefore || e.Kind == record.Delete {
			v.Row = nil
		}
		i := firstAtLeast(j.versions, e.Ts)
		if i < len(j.versions) && j.versions[i].Ts == e.Ts {
			j.versions[i] = v // the later arrival wins
		} else {
			j.versions = insertByTs(j.versions, v)
		}
		// Prune once an entry with an older one before it is behind the
		// history: this one, or the one after it when it went in first.
		if i > 0 || v.Row == nil {
			fx.SetTimers = append(fx.SetTimers, addSat(e.Ts, j.history))
		}
		if i == 0 && len(j.versions) > 1 {
			fx.SetTimers = append(fx.SetTimers, addSat(j.versions[1].Ts, j.history))
		}
	default:
		fx.Late = append(fx.Late, Late{Element: e, Reason: LateUnknownSide})
	}
}

// lookup answers as Kafka Streams' versioned store answers get(key, t):
// the version valid at t (the entry of the greatest time <= t, none when it
// is a tombstone); for t behind the history (t < horizon, expired), only the
// latest version, when it is valid at t: the latest value never expires,
// older ones are no longer answered.
func (j *TemporalKafka) lookup(t, horizon int64) (v *elem, expired bool) {
	if t < horizon {
		if n := len(j.versions); n > 0 && j.versions[n-1].Row != nil && j.versions[n-1].Ts <= t {
			return &j.versions[n-1], true
		}
		return nil, true
	}
	if i := firstAbove(j.versions, t); i > 0 && j.versions[i-1].Row != nil {
		return &j.versions[i-1], false
	}
	return nil, false
}

// emit joins stream record p with the version lookup finds (horizon: the
// history's start, math.MinInt64 for none): padded when there is none in a
// left join, nothing in an inner one, where a record behind the history is
// reported late rather than dropped unseen.
func (j *TemporalKafka) emit(fx *Effects, p *elem, horizon int64) {
	v, expired := j.lookup(p.Ts, horizon)
	switch {
	case v != nil:
		emitPair(fx, j.shape, "temporal", p.Ts, p, v, p.Ts)
	case j.outer:
		emitPair(fx, j.shape, "temporal", p.Ts, p, nil, p.Ts)
	case expired:
		fx.Late = append(fx.Late, Late{Element: Element{Side: record.Left, Ts: p.Ts, Row: p.Row, Pos: p.Pos}, Reason: LateBehindHistory})
	}
}

// OnTimer emits, in order, the buffered records whose grace has passed
// (t + G <= watermark), then drops the versions behind the history.
func (j *TemporalKafka) OnTimer(ts int64, watermark int64, fx *Effects) {
	n := 0
	for ; n < len(j.probes) && addSat(j.probes[n].Ts, j.grace) <= watermark; n++ {
		j.emit(fx, &j.probes[n], math.MinInt64)
	}
	j.probes = trim(j.probes, n)
	horizon := subSat(watermark, j.history)
	if i := firstAbove(j.versions, horizon); i > 1 {
		j.versions = trim(j.versions, i-1)
	}
	n = 0
	for n < len(j.versions) && j.versions[n].Row == nil && j.versions[n].Ts <= horizon {
		n++
	}
	j.versions = trim(j.versions, n)
}

// Empty reports whether the key holds no version and no buffered record.
func (j *TemporalKafka) Empty() bool { return len(j.versions) == 0 && len(j.probes) == 0 }

// Snapshot encodes the state: TimedSnapshotVersion, 'K', then JSON of the
// versions (a tombstone has "r":null) and the buffered stream records.
// Equal states encode to equal bytes. It is snapshotReflect's bytes,
// written from the elements' cached JSON.
func (j *TemporalKafka) Snapshot() []byte {
	return temporalSnapshot('K', j.versions, j.probes, j.snapshotReflect)
}

// snapshotReflect is Snapshot by encoding/json's reflection: the
// fallback, and what tests compare Snapshot with.
func (j *TemporalKafka) snapshotReflect() []byte {
	return encodeSnap('K', temporalSnap{V: j.versions, P: j.probes})
}

// Restore replaces the state with the one b encodes; on error (a wrapped
// ErrBadTimedSnapshot) the state is unchanged.
func (j *TemporalKafka) Restore(b []byte) error {
	v, p, err := decodeTemporalSnap(b, 'K')
	if err != nil {
		return err
	}
	j.versions, j.probes = v, p
	return nil
}

var _ Timed = (*TemporalKafka)(nil)
