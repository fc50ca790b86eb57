package replay

import (
	"encoding/json"
	"fmt"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// nullText is an input's key as a late line shows it.
func nullText(ev eventLine) string {
	if ev.null {
		return "null"
	}
	return ev.key
}

// lateElem writes an element the join refused as late.
func (r *eventsRun) lateElem(key record.Key, l joins.Late) error {
	r.d.sum.Late++
	e := l.Element
	if !r.d.join.eventTime() {
		// A changelog join's change of a versioned side, out of order: its
		// key is a join value's key form, its kind +I or -D.
		k, err := marshal(string(key))
		if err != nil {
			return err
		}
		v, _ := r.value(e.Row)
		return r.writeLate(int(e.Pos.Offset), e.Side, string(k), e.Ts, v, e.Kind.String(), l.Reason)
	}
	op := ""
	var v json.RawMessage
	if e.Row == nil {
		op = "-D"
	} else if raw, err := r.value(e.Row); err == nil {
		v = raw
	}
	return r.writeLate(int(e.Pos.Offset), e.Side, string(key), e.Ts, v, op, l.Reason)
}

// lateRecord is a late or dropped input. Key is its canonical JSON text.
type lateRecord struct {
	Side   string          `json:"side"`
	Key    json.RawMessage `json:"key,omitempty"`
	Ts     *int64          `json:"ts,omitempty"`
	Value  json.RawMessage `json:"value,omitempty"`
	Op     string          `json:"op,omitempty"`
	Line   int             `json:"line"`
	Reason string          `json:"reason"`
}

func (r *eventsRun) writeLate(n int, side record.Side, key string, ts int64, v json.RawMessage, op, reason string) error {
	if r.late == nil {
		return nil
	}
	ll := lateRecord{Side: r.d.sideName(side), Value: v, Op: op, Line: n, Reason: reason}
	if key != "" {
		ll.Key = json.RawMessage(key)
	}
	if r.d.join.eventTime() || reason == joins.LateOutOfOrder {
		ll.Ts = &ts
	}
	b, err := marshal(ll)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := r.late.Write(b); err != nil {
		r.d.werr = fmt.Errorf("replay: late: %w", err)
		return r.d.werr
	}
	return nil
}
