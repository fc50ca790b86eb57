package timers

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/joinery/joinery/record"
)

// EncodingVersion is the version byte Encode writes first.
const EncodingVersion byte = 1

var (
	// ErrUnknownVersion is returned by Decode for an encoding whose version
	// byte it does not know.
	ErrUnknownVersion = errors.New("timers: unknown encoding version")
	// ErrCorrupt is returned (wrapped, with detail) by Decode for a malformed
	// encoding.
	ErrCorrupt = errors.New("timers: corrupt encoding")
)

// Encode returns the service's timers in a versioned binary form, for
// snapshots. The form is canonical: equal contents encode to equal bytes.
//
// Version 1 layout: the version byte 1; the timer count as a uvarint; then
// per timer, in (timestamp, key) order, the timestamp as a (zig-zag) varint,
// the key's length as a uvarint and the key's bytes.
func (s *TimerService) Encode() []byte {
	return s.AppendEncode(nil)
}

// AppendEncode appends Encode's output to b and returns the extended slice.
func (s *TimerService) AppendEncode(b []byte) []byte {
	b = append(b, EncodingVersion)
	b = binary.AppendUvarint(b, uint64(len(s.h.items)))
	for _, t := range s.Timers() {
		b = binary.AppendVarint(b, t.Ts)
		b = binary.AppendUvarint(b, uint64(len(t.Key)))
		b = append(b, t.Key...)
	}
	return b
}

// Decode replaces the service's timers with those encoded in b. On error the
// service is left unchanged; the error matches ErrUnknownVersion or
// ErrCorrupt. Decode rejects timers out of (timestamp, key) order,
// duplicates and trailing bytes, so only Encode's output is accepted.
func (s *TimerService) Decode(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty", ErrCorrupt)
	}
	if b[0] != EncodingVersion {
		return fmt.Errorf("%w %d", ErrUnknownVersion, b[0])
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return fmt.Errorf("%w: bad timer count", ErrCorrupt)
	}
	b = b[k:]
	// Each timer takes at least two bytes; this bounds the allocation.
	if n > uint64(len(b))/2 {
		return fmt.Errorf("%w: %d timers in %d bytes", ErrCorrupt, n, len(b))
	}
	items := make([]Timer, 0, n)
	for i := range n {
		ts, k := binary.Varint(b)
		if k <= 0 {
			return fmt.Errorf("%w: timer %d: bad timestamp", ErrCorrupt, i)
		}
		b = b[k:]
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return fmt.Errorf("%w: timer %d: bad key length", ErrCorrupt, i)
		}
		b = b[k:]
		t := Timer{Key: record.Key(b[:l]), Ts: ts}
		b = b[l:]
		if len(items) > 0 && compareTimers(items[len(items)-1], t) >= 0 {
			return fmt.Errorf("%w: timer %d out of order", ErrCorrupt, i)
		}
		items = append(items, t)
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(b))
	}
	// A sorted slice is a valid min-heap.
	d := TimerService{h: timerHeap{items: items, index: make(map[Timer]int, len(items))}, byKey: make(map[record.Key]map[int64]struct{})}
	for i, t := range items {
		d.h.index[t] = i
		set := d.byKey[t.Key]
		if set == nil {
			set = make(map[int64]struct{})
			d.byKey[t.Key] = set
		}
		set[t.Ts] = struct{}{}
	}
	if len(items) == 0 {
		d.h.items = nil
	}
	*s = d
	return nil
}
