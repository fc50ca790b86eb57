package actors

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/joinery/joinery/record"
)

// stateVersion is the first byte of a key actor's persisted state.
const stateVersion byte = 1

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
}

type outboxEntry struct {
	Part    string          `json:"p"`
	Offset  int64           `json:"n"`
	Outputs []record.Output `json:"out"`
	// enc caches the entry's JSON: an entry never changes once made, and
	// it is written with every state write until its offset is committed.
	enc json.RawMessage
	// sentTo is the sender session (Apply.session) the outputs were last
	// sent to; memory only: a reloaded key re-sends them once.
	sentTo string
}

// keyStateWire is keyState as encodeState writes it, with the outbox
// entries already encoded.
type keyStateWire struct {
	Join   []byte            `json:"j,omitempty"`
	Outbox []json.RawMessage `json:"o,omitempty"`
	Timers []int64           `json:"t,omitempty"`
	Wm     *int64            `json:"w,omitempty"`
	Src    map[string]string `json:"s,omitempty"`
	Seq    uint64            `json:"q,omitempty"`
}

// encodeState encodes s. It caches each outbox entry's encoding in place
// (s.Outbox shares its array with the actor's outbox), so an entry is
// encoded once however many state writes carry it.
func encodeState(s keyState) ([]byte, error) {
	w := keyStateWire{Join: s.Join, Timers: s.Timers, Wm: s.Wm, Src: s.Src, Seq: s.Seq}
	if len(s.Outbox) > 0 {
		w.Outbox = make([]json.RawMessage, len(s.Outbox))
		for i := range s.Outbox {
			e := &s.Outbox[i]
			if e.enc == nil {
				b, err := json.Marshal(e)
				if err != nil {
					return nil, err
				}
				e.enc = b
			}
			w.Outbox[i] = e.enc
		}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	return append([]byte{stateVersion}, b...), nil
}

var errBadState = errors.New("actors: bad key state")

func decodeState(b []byte) (keyState, error) {
	var s keyState
	if len(b) == 0 {
		return s, nil
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
	return DecodeRow(b)
}

// DecodeState splits a key actor's persisted state into the join snapshot and
// the number of outbox entries, for offline inspection.
func DecodeState(b []byte) (join []byte, outbox int, err error) {
	s, err := decodeState(b)
	return s.Join, len(s.Outbox), err
}

// StateInfo is a key actor's persisted state as offline tools see it.
type StateInfo struct {
	Join      []byte  // the join's snapshot
	Outbox    int     // inputs whose outputs are kept for re-emission
	Timers    []int64 // an event-time join's pending timers, ascending
	Watermark int64   // the watermark the key advanced to; math.MinInt64 if none
}

// DecodeStateInfo decodes a key actor's persisted state for offline
// inspection.
func DecodeStateInfo(b []byte) (StateInfo, error) {
	s, err := decodeState(b)
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
