package joins

// Hand-written snapshot encoding of the event-time joins that buffer
// elements: exactly the bytes encodeSnap (encoding/json by reflection,
// HTML escaping off) writes for their snapshot structs, but each
// element's JSON is encoded once and cached in the element (elem.enc), so
// a state write copies the buffered rows' bytes instead of re-encoding
// them. encodeSnap was most of the window join's state write on q8
// (docs/performance/2026-12-06-nexmark.md, "Where the node's CPU goes on q8"). A row holding a
// value jsonenc cannot encode exactly makes the join fall back to
// encodeSnap for that snapshot.

import (
	"strconv"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/record"
)

// fastSnap returns TimedSnapshotVersion, kind, then what body appends —
// the snapshot struct's JSON — or, when body is not ok, what slow returns:
// the join's snapshotReflect (encodeSnap), which also reports a value
// encoding/json rejects. size estimates the length (snapSize): one
// allocation when it is enough. (jsonenc.Exact's pooled buffer is not
// used: a key's window state is often larger than the pool keeps, and
// growing a buffer from scratch was most of the bytes allocated.)
func fastSnap(kind byte, size int, body func(b []byte) ([]byte, bool), slow func() []byte) []byte {
	b, ok := body(append(make([]byte, 0, size), TimedSnapshotVersion, kind))
	if !ok {
		return slow()
	}
	return b
}

// snapSize adds to n the bytes es will take in a snapshot: the cached
// JSON's length, or a guess for an element not yet encoded.
func snapSize[T any](n int, es []T, enc func(*T) []byte) int {
	for i := range es {
		n += elemSize(enc(&es[i]))
	}
	return n
}

// elemSize is the bytes an element whose cache is enc will take in a
// snapshot: its length, or a guess when it is not yet encoded.
func elemSize(enc []byte) int {
	if enc != nil {
		return len(enc) + 12 // a matchElem's ,"m":true, a kindElem's ,"k":"-U"
	}
	return 256
}

func elemEnc(e *elem) []byte           { return e.enc }
func matchElemEnc(e *matchElem) []byte { return e.enc }
func kindElemEnc(e *kindElem) []byte   { return e.enc }

// JSONCacher is implemented by the event-time joins whose Snapshot caches
// each buffered element's JSON. CachedJSON is the bytes those caches hold:
// heap the state's encoded size does not tell (it is as much again as the
// elements' part of the snapshot), which a node's memory budget adds
// (keycore.Write.Cached).
type JSONCacher interface {
	CachedJSON() int
}

var (
	_ JSONCacher = (*Windowed)(nil)
	_ JSONCacher = (*Interval)(nil)
	_ JSONCacher = (*TimeBounded)(nil)
	_ JSONCacher = (*Temporal)(nil)
	_ JSONCacher = (*TemporalKafka)(nil)
	_ JSONCacher = (*TemporalFlink)(nil)
	_ JSONCacher = (*TemporalLatest)(nil)
)

// CachedJSON implements JSONCacher.
func (j *Windowed) CachedJSON() int {
	n := 0
	for _, w := range j.wins {
		n += cachedJSON(w.L, elemEnc) + cachedJSON(w.R, elemEnc)
	}
	return n
}

// CachedJSON implements JSONCacher.
func (j *Interval) CachedJSON() int {
	return cachedJSON(j.left, elemEnc) + cachedJSON(j.right, elemEnc)
}

// CachedJSON implements JSONCacher.
func (j *TimeBounded) CachedJSON() int {
	return cachedJSON(j.left, matchElemEnc) + cachedJSON(j.right, matchElemEnc)
}

// CachedJSON implements JSONCacher.
func (j *Temporal) CachedJSON() int {
	return cachedJSON(j.versions, elemEnc) + cachedJSON(j.probes, elemEnc)
}

// CachedJSON implements JSONCacher.
func (j *TemporalKafka) CachedJSON() int {
	return cachedJSON(j.versions, elemEnc) + cachedJSON(j.probes, elemEnc)
}

// CachedJSON implements JSONCacher.
func (j *TemporalFlink) CachedJSON() int {
	return cachedJSON(j.versions, kindElemEnc) + cachedJSON(j.probes, kindElemEnc)
}

// CachedJSON implements JSONCacher: the current version's cache.
func (j *TemporalLatest) CachedJSON() int {
	if j.latest == nil {
		return 0
	}
	return cap(j.latest.enc)
}

// cachedJSON is the bytes of es's cached JSON (enc: an element's cache).
func cachedJSON[T any](es []T, enc func(*T) []byte) int {
	n := 0
	for i := range es {
		n += cap(enc(&es[i]))
	}
	return n
}

// appendPosition appends p as encoding/json encodes a record.Position.
func appendPosition(b []byte, p *record.Position) []byte {
	b = append(b, `{"source":`...)
	b = jsonenc.AppendString(b, p.Source)
	b = append(b, `,"partition":`...)
	b = strconv.AppendInt(b, int64(p.Partition), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, p.Offset, 10)
	return append(b, '}')
}

// appendElem appends e as encoding/json encodes an elem, from its cache
// (filled here on first use). ok is false when its row holds a value
// jsonenc does not encode exactly; nothing is cached then.
func appendElem(b []byte, e *elem) ([]byte, bool) {
	if e.enc == nil {
		start := len(b)
		b, ok := appendElemUncached(b, e)
		if ok {
			e.enc = append(make([]byte, 0, len(b)-start), b[start:]...)
		}
		return b, ok
	}
	return append(b, e.enc...), true
}

// appendElemUncached is appendElem without filling the cache (using it
// when filled): for the copies of an element that sit in several sliding
// windows, each of which would hold its own cache.
func appendElemUncached(b []byte, e *elem) ([]byte, bool) {
	if e.enc == nil {
		b = append(b, `{"t":`...)
		b = strconv.AppendInt(b, e.Ts, 10)
		b = append(b, `,"p":`...)
		b = appendPosition(b, &e.Pos)
		b = append(b, `,"r":`...)
		var ok bool
		if b, ok = jsonenc.AppendValue(b, e.Row); !ok {
			return b, false
		}
		return append(b, '}'), true
	}
	return append(b, e.enc...), true
}

// appendMatchElem appends e as encoding/json encodes a matchElem: the
// embedded elem's fields, then "m":true when matched (the flag changes in
// place, so it is not in the cache).
func appendMatchElem(b []byte, e *matchElem) ([]byte, bool) {
	b, ok := appendElem(b, &e.elem)
	if ok && e.Matched {
		b = append(reopen(b, "m"), "true}"...)
	}
	return b, ok
}

// appendKindElem appends e as encoding/json encodes a kindElem: the
// embedded elem's fields (from its cache, which is the elem's JSON alone,
// as for a matchElem), then "k" (Kind.MarshalText, a JSON string) unless
// it is Insert (omitempty: the zero Kind).
func appendKindElem(b []byte, e *kindElem) ([]byte, bool) {
	b, ok := appendElem(b, &e.elem)
	if ok && e.K != record.Insert {
		b = append(jsonenc.AppendString(reopen(b, "k"), e.K.String()), '}')
	}
	return b, ok
}

// reopen drops the '}' that ends the object b ends with and appends
// ,"name": — the start of one more field, which the caller closes with
// '}'. name must need no escaping.
func reopen(b []byte, name string) []byte {
	b = append(b[:len(b)-1], `,"`...)
	b = append(b, name...)
	return append(b, `":`...)
}

// appendList appends es as encoding/json encodes a slice: null when nil,
// else [one(e),...].
func appendList[T any](b []byte, es []T, one func([]byte, *T) ([]byte, bool)) ([]byte, bool) {
	if es == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i := range es {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = one(b, &es[i]); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

// appendInts appends m as encoding/json encodes a non-nil []int.
func appendInts(b []byte, m []int) []byte {
	b = append(b, '[')
	for i, p := range m {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(p), 10)
	}
	return append(b, ']')
}

// appendSides appends {"<l>":L,"<r>":R}, two buffers without omitempty,
// as encoding/json encodes sidesSnap, matchSnap and temporalSnap.
func appendSides[T any](b []byte, lname, rname string, l, r []T, one func([]byte, *T) ([]byte, bool)) ([]byte, bool) {
	b = append(b, `{"`...)
	b = append(b, lname...)
	b = append(b, `":`...)
	b, ok := appendList(b, l, one)
	if !ok {
		return b, false
	}
	b = append(b, `,"`...)
	b = append(b, rname...)
	b = append(b, `":`...)
	if b, ok = appendList(b, r, one); !ok {
		return b, false
	}
	return append(b, '}'), true
}

// appendWinState appends w as encoding/json encodes a *winState (null
// when nil): omitempty leaves out a false Fired and empty L, R, LM, RM.
// Its elements are appended by one (appendElem, or appendElemUncached).
func appendWinState(b []byte, w **winState, one func([]byte, *elem) ([]byte, bool)) ([]byte, bool) {
	ws := *w
	if ws == nil {
		return append(b, "null"...), true
	}
	b = append(b, `{"w":{"s":`...)
	b = strconv.AppendInt(b, ws.W.Start, 10)
	b = append(b, `,"e":`...)
	b = strconv.AppendInt(b, ws.W.End, 10)
	b = append(b, `},"a":`...)
	b = appendPosition(b, &ws.First)
	if ws.Fired {
		b = append(b, `,"f":true`...)
	}
	var ok bool
	if len(ws.L) > 0 {
		b = append(b, `,"l":`...)
		if b, ok = appendList(b, ws.L, one); !ok {
			return b, false
		}
	}
	if len(ws.R) > 0 {
		b = append(b, `,"r":`...)
		if b, ok = appendList(b, ws.R, one); !ok {
			return b, false
		}
	}
	if len(ws.LM) > 0 {
		b = appendInts(append(b, `,"lm":`...), ws.LM)
	}
	if len(ws.RM) > 0 {
		b = appendInts(append(b, `,"rm":`...), ws.RM)
	}
	return append(b, '}'), true
}
