package keycore

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/internal/stateparts"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// stateVersion is the first byte of a key actor's persisted state.
const stateVersion byte = 1

// baseVersion is the first byte of the base of a state stored in parts
// (Config.Parts): the few fields a base holds, in binary,
//
//	0x02 | flags | [uvarint seq] | [uvarint n, n × varint timer delta]
//	     | [varint watermark] | [uvarint len, join snapshot]
//
// with flags' bits 0–3 saying which of seq, timers, watermark and join
// follow. A changelog-join key's base is its output sequence alone: 9
// bytes, where version 1's JSON took 24.
const baseVersion byte = 2

const (
	baseSeq = 1 << iota
	baseTimers
	baseWm
	baseJoin
)

// encodeBase encodes a parts state's base (no outbox, no positions).
func encodeBase(s keyState) []byte {
	b := make([]byte, 2, 2+binary.MaxVarintLen64*(2+len(s.Timers))+binary.MaxVarintLen32+len(s.Join))
	b[0] = baseVersion
	if s.Seq != 0 {
		b[1] |= baseSeq
		b = binary.AppendUvarint(b, s.Seq)
	}
	if len(s.Timers) > 0 {
		b[1] |= baseTimers
		b = binary.AppendUvarint(b, uint64(len(s.Timers)))
		prev := int64(0)
		for _, t := range s.Timers {
			b = binary.AppendVarint(b, t-prev)
			prev = t
		}
	}
	if s.Wm != nil {
		b[1] |= baseWm
		b = binary.AppendVarint(b, *s.Wm)
	}
	if len(s.Join) > 0 {
		b[1] |= baseJoin
		b = binary.AppendUvarint(b, uint64(len(s.Join)))
		b = append(b, s.Join...)
	}
	return b
}

// decodeBase decodes encodeBase's bytes.
func decodeBase(b []byte) (keyState, error) {
	var s keyState
	bad := func(what string) (keyState, error) {
		return keyState{}, fmt.Errorf("%w: base: bad %s", errBadState, what)
	}
	if len(b) < 2 || b[0] != baseVersion || b[1]&^(baseSeq|baseTimers|baseWm|baseJoin) != 0 {
		return bad("header")
	}
	flags, r := b[1], b[2:]
	if flags&baseSeq != 0 {
		v, n := binary.Uvarint(r)
		if n <= 0 {
			return bad("sequence")
		}
		s.Seq, r = v, r[n:]
	}
	if flags&baseTimers != 0 {
		cnt, n := binary.Uvarint(r)
		if n <= 0 || cnt == 0 || cnt > uint64(len(r)) {
			return bad("timers")
		}
		r = r[n:]
		s.Timers = make([]int64, 0, cnt)
		prev := int64(0)
		for range cnt {
			d, n := binary.Varint(r)
			if n <= 0 {
				return bad("timers")
			}
			prev += d
			s.Timers, r = append(s.Timers, prev), r[n:]
		}
	}
	if flags&baseWm != 0 {
		v, n := binary.Varint(r)
		if n <= 0 {
			return bad("watermark")
		}
		s.Wm, r = &v, r[n:]
	}
	if flags&baseJoin != 0 {
		l, n := binary.Uvarint(r)
		if n <= 0 || l == 0 || l > uint64(len(r)-n) {
			return bad("join snapshot")
		}
		s.Join, r = r[n:n+int(l)], r[n+int(l):]
	}
	if len(r) > 0 {
		return bad("length")
	}
	return s, nil
}

// keyState is what a key actor persists in persistence.Snapshot.State: the
// join's own snapshot and the outbox.
//
// The outbox keeps, per input whose outputs have not been committed by its
// source yet, the outputs it made. State, applied offsets and outbox are
// written together, so after a crash between the state write and the sink
// write, the replayed input is skipped by the join (already applied) and its
// outputs are sent again from the outbox, with the same ids: outputs are at
// least once, never lost. An entry goes once the sender reports the input's
// offset committed (Apply.committed).
type keyState struct {
	Join   []byte        `json:"j,omitempty"`
	Outbox []outboxEntry `json:"o,omitempty"`
	// Event-time joins: pending timers (ascending) and the watermark the key
	// has advanced to.
	Timers []int64 `json:"t,omitempty"`
	Wm     *int64  `json:"w,omitempty"`
	// Src is the changelog join's last applied Debezium source position per
	// row, "side/pk" -> position (see keypb.Event.SrcPos). Deleted rows keep
	// theirs, so a replayed older create cannot bring them back.
	Src map[string]string `json:"s,omitempty"`
	// Seq is the Seq of the key's last output.
	Seq uint64 `json:"q,omitempty"`

	// Read from parts (decodeParts), never encoded: the left row's
	// position, folded into its part (its id needs the row's primary key
	// column, which the Core knows); the ids of positions read from s:
	// parts; and whether some s: part is of a form that the next Write
	// folds into a row part.
	leftPos  string
	srcParts []string
	unfolded bool
}

type outboxEntry struct {
	Part    string          `json:"p"`
	Offset  int64           `json:"n"`
	Outputs []record.Output `json:"out"`
	// enc caches the entry's JSON: an entry never changes once made, and
	// it is written with every state write until its offset is committed.
	enc json.RawMessage
	// SentTo is the sender's run (Request.Sender) a firing's outputs
	// were last sent to. It is stored as the entry was first encoded (the
	// run the firing answered), so a key reloaded while that run lives (a
	// passivation, the memory budget's) does not send them to it again; a
	// run sent them after that is in memory only, and gets them once more
	// after a reload. Empty for an input's entries.
	SentTo string `json:"to,omitempty"`
	// id names the entry's part in a state stored in parts ("o:" and id
	// in 16 hex digits; ascending in outbox order); memory only otherwise.
	id uint64
	// offloaded: the length of enc, dropped from memory once durable in
	// the store (Core.Offload); 0 while enc is here.
	offloaded int
}

// encLen is the length of the entry's JSON, in memory or offloaded.
func (e *outboxEntry) encLen() int { return len(e.enc) + e.offloaded }

// errOffloaded: an entry's JSON is needed and only the store has it.
var errOffloaded = errors.New("keycore: an outbox entry's JSON is in the store only (Offload): reload the key")

// encode caches the entry's JSON (see encodeState) and returns it.
func (e *outboxEntry) encode() ([]byte, error) {
	if e.offloaded > 0 {
		return nil, errOffloaded
	}
	if e.enc == nil {
		var rows [4][2]int
		spans := rows[:0]
		b, ok := jsonenc.Exact(func(b []byte) (_ []byte, ok bool) {
			b, spans, ok = appendOutboxEntry(b, e, spans)
			return b, ok
		})
		if !ok {
			var err error
			if b, err = json.Marshal(e); err != nil {
				return nil, err
			}
		} else {
			// The rows' JSON (HTML escaping off, as the entry's) is what
			// a sink's changelog line holds: the outputs carry it there
			// (record.Output.RowJSON), and no row is encoded twice.
			for i, sp := range spans {
				e.Outputs[i].RowJSON = b[sp[0]:sp[1]:sp[1]]
			}
		}
		e.enc = b
		// The JSON is now the entry's only copy: its outputs are needed
		// again only if the input is re-sent before it is committed
		// (Entry.outputs decodes them), and an outbox entry of a key
		// touched once lives as long as the key (docs/performance.md).
		e.Outputs = nil
	}
	return e.enc, nil
}

// encodeState encodes s exactly as encoding/json encodes a keyState, but
// by hand: each outbox entry's encoding is cached in place (s.Outbox shares
// its array with the actor's outbox), so an entry is encoded once however
// many state writes carry it, and nothing already encoded is re-scanned.
func encodeState(s keyState) ([]byte, error) {
	for i := range s.Outbox {
		if _, err := s.Outbox[i].encode(); err != nil {
			return nil, err
		}
	}
	size := 64 + base64.StdEncoding.EncodedLen(len(s.Join)) + 12*len(s.Timers)
	for i := range s.Outbox {
		size += len(s.Outbox[i].enc) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, stateVersion, '{')
	field := func(name string) {
		if len(b) > 2 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
	}
	if len(s.Join) > 0 {
		field("j")
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, s.Join)
		b = append(b, '"')
	}
	if len(s.Outbox) > 0 {
		field("o")
		b = append(b, '[')
		for i := range s.Outbox {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, s.Outbox[i].enc...)
		}
		b = append(b, ']')
	}
	if len(s.Timers) > 0 {
		field("t")
		b = append(b, '[')
		for i, t := range s.Timers {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, t, 10)
		}
		b = append(b, ']')
	}
	if s.Wm != nil {
		field("w")
		b = strconv.AppendInt(b, *s.Wm, 10)
	}
	if len(s.Src) > 0 {
		field("s")
		m, err := json.Marshal(s.Src)
		if err != nil {
			return nil, err
		}
		b = append(b, m...)
	}
	if s.Seq != 0 {
		field("q")
		b = strconv.AppendUint(b, s.Seq, 10)
	}
	return append(b, '}'), nil
}

// appendOutboxEntry appends e as encoding/json encodes it (json.Marshal,
// HTML escaping on: outputs' ids, pks and rows go through jsonenc, which
// writes them with HTML escaping off, so an entry whose strings hold
// '<', '>' or '&' is escaped afterwards, jsonenc.AppendHTMLEscaped, to
// keep the bytes identical to what json.Marshal wrote before). ok is
// false for rows outside jsonenc's types.
//
// spans, when not nil, gets each output's row as b[start:end] appended
// and is returned: the row's JSON with HTML escaping off, as a sink writes
// it. An escaped entry's rows are not that: spans then comes back empty.
// (A value, not a pointer: a pointer moved the caller's array to the
// heap.)
func appendOutboxEntry(b []byte, e *outboxEntry, spans [][2]int) ([]byte, [][2]int, bool) {
	start := len(b)
	b = append(b, `{"p":`...)
	b = jsonenc.AppendString(b, e.Part)
	b = append(b, `,"n":`...)
	b = strconv.AppendInt(b, e.Offset, 10)
	b = append(b, `,"out":`...)
	if e.Outputs == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range e.Outputs {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			var start, end int
			if b, start, end, ok = jsonenc.AppendOutputRow(b, &e.Outputs[i], nil); !ok {
				return b, spans, false
			}
			if spans != nil {
				spans = append(spans, [2]int{start, end})
			}
		}
		b = append(b, ']')
	}
	if e.SentTo != "" {
		b = append(b, `,"to":`...)
		b = jsonenc.AppendString(b, e.SentTo)
	}
	b = append(b, '}')
	if bytes.ContainsAny(b[start:], "<>&") {
		end := len(b)
		b = jsonenc.AppendHTMLEscaped(b, b[start:end])
		b = b[:start+copy(b[start:], b[end:])]
		if spans != nil {
			spans = spans[:0]
		}
	}
	return b, spans, true
}

// outputs returns the entry's outputs: the decoded ones while it has them,
// else decoded from its cached JSON as a reloaded key's are (rows with
// json.Number, so re-emitted rows are byte-identical to the first).
func (e *outboxEntry) outputs() []record.Output {
	if e.Outputs != nil || e.enc == nil {
		return e.Outputs
	}
	var d outboxEntry
	if err := json.Unmarshal(e.enc, &d); err != nil {
		return nil // not reached: enc is this package's own encoding
	}
	for j := range d.Outputs {
		row, err := renumber(d.Outputs[j].Row)
		if err != nil {
			return nil
		}
		d.Outputs[j].Row = row
	}
	return d.Outputs
}

var errBadState = errors.New("keycore: bad key state")

func decodeState(b []byte, sch *schemas) (keyState, error) {
	var s keyState
	if len(b) == 0 {
		return s, nil
	}
	if stateparts.IsPacked(b) {
		s, _, err := decodeParts(b, sch)
		return s, err
	}
	if b[0] == baseVersion {
		return decodeBase(b)
	}
	if b[0] != stateVersion {
		return s, fmt.Errorf("%w: unknown version %d", errBadState, b[0])
	}
	if err := json.Unmarshal(b[1:], &s); err != nil {
		return keyState{}, fmt.Errorf("%w: %v", errBadState, err)
	}
	for i := range s.Outbox {
		for j := range s.Outbox[i].Outputs {
			// Rows decoded by encoding/json hold float64 numbers; keep json.Number
			// so re-emitted rows are byte-identical to the first emission.
			row, err := renumber(s.Outbox[i].Outputs[j].Row)
			if err != nil {
				return keyState{}, err
			}
			s.Outbox[i].Outputs[j].Row = row
		}
	}
	return s, nil
}

func renumber(r record.Row) (record.Row, error) {
	if r == nil {
		return nil, nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return decodeRow(b)
}

// StateInfo is a key actor's persisted state as offline tools see it.
type StateInfo struct {
	Join      []byte  // the join's snapshot
	Outbox    int     // inputs whose outputs are kept for re-emission
	Timers    []int64 // an event-time join's pending timers, ascending
	Watermark int64   // the watermark the key advanced to; math.MinInt64 if none
}

// DecodeStateInfo decodes a key actor's persisted state for offline
// inspection. spec is the job's changelog join, whose kept columns rows
// may be stored under; nil for other joins.
func DecodeStateInfo(b []byte, spec *joins.CDCSpec) (StateInfo, error) {
	s, err := decodeState(b, schemasOf(spec))
	if err != nil {
		return StateInfo{}, err
	}
	info := StateInfo{Join: s.Join, Outbox: len(s.Outbox), Timers: s.Timers, Watermark: math.MinInt64}
	if s.Wm != nil {
		info.Watermark = *s.Wm
	}
	return info, nil
}

// EncodeJoinState wraps a join snapshot as a key actor persists it (with an
// empty outbox): for tools and tests that write state directly.
func EncodeJoinState(join []byte) ([]byte, error) {
	return encodeState(keyState{Join: join})
}

// decodeRow decodes a JSON row, keeping numbers as json.Number; empty input
// is a nil row.
func decodeRow(b []byte) (record.Row, error) {
	if len(b) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var r record.Row
	if err := d.Decode(&r); err != nil {
		return nil, fmt.Errorf("keycore: bad row: %w", err)
	}
	return r, nil
}
