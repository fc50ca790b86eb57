package redisstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// snapshotVersion is the first byte of every encoded snapshot value.
const snapshotVersion byte = 1

// errCorrupt marks a stored value this version cannot decode.
var errCorrupt = errors.New("corrupt snapshot value")

// encodeSnapshot encodes offsets and state into one value (see the package
// doc). Partition ids are written in sorted order.
func encodeSnapshot(offsets map[string]int64, state []byte) []byte {
	return appendSnapshot(make([]byte, 0, snapshotLen(offsets, state)), offsets, state)
}

// snapshotLen bounds the length of encodeSnapshot's value.
func snapshotLen(offsets map[string]int64, state []byte) int {
	n := 1 + binary.MaxVarintLen64 + len(state)
	for p := range offsets {
		n += 2*binary.MaxVarintLen64 + len(p)
	}
	return n
}

// appendSnapshot appends encodeSnapshot's value to b. The partition ids
// are sorted in a buffer on the stack when there are few (a key's events
// come from a few partitions), so it allocates only to grow b.
func appendSnapshot(b []byte, offsets map[string]int64, state []byte) []byte {
	var small [8]string
	ids := small[:0]
	for p := range offsets {
		ids = append(ids, p)
	}
	slices.Sort(ids)
	b = append(b, snapshotVersion)
	b = binary.AppendUvarint(b, uint64(len(offsets)))
	for _, p := range ids {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
		b = binary.AppendVarint(b, offsets[p])
	}
	return append(b, state...)
}

// decodeSnapshot decodes a value written by encodeSnapshot. The returned
// state aliases b; offsets is never nil.
func decodeSnapshot(b []byte) (offsets map[string]int64, state []byte, err error) {
	if len(b) == 0 {
		return nil, nil, fmt.Errorf("%w: empty", errCorrupt)
	}
	if b[0] != snapshotVersion {
		return nil, nil, fmt.Errorf("%w: unknown version %d", errCorrupt, b[0])
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	// Each entry takes at least two bytes: a length and an offset.
	if k <= 0 || n > uint64(len(b)-k)/2 {
		return nil, nil, fmt.Errorf("%w: bad offset count", errCorrupt)
	}
	b = b[k:]
	offsets = make(map[string]int64, n)
	for range n {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, nil, fmt.Errorf("%w: bad partition id", errCorrupt)
		}
		p := string(b[k : k+int(l)])
		b = b[k+int(l):]
		o, k := binary.Varint(b)
		if k <= 0 {
			return nil, nil, fmt.Errorf("%w: bad offset", errCorrupt)
		}
		b = b[k:]
		offsets[p] = o
	}
	return offsets, b, nil
}
