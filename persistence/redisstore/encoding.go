package redisstore

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/joinery/joinery/record"
)

// snapshotVersion is the first byte of every encoded snapshot value.
const snapshotVersion byte = 1

// errCorrupt marks a stored value this version cannot decode.
var errCorrupt = errors.New("corrupt snapshot value")

// encodeSnapshot encodes offsets and state into one value (see the package
// doc). Partition ids are written in their (ascending) order.
func encodeSnapshot(offsets record.Offsets, state []byte) []byte {
	return appendSnapshot(make([]byte, 0, snapshotLen(offsets, state)), offsets, state)
}

// snapshotLen bounds the length of encodeSnapshot's value.
func snapshotLen(offsets record.Offsets, state []byte) int {
	n := 1 + binary.MaxVarintLen64 + len(state)
	for _, po := range offsets {
		n += 2*binary.MaxVarintLen64 + len(po.Partition)
	}
	return n
}

// appendSnapshot appends encodeSnapshot's value to b; it allocates only to
// grow b. The offsets are in order already (record.Offsets; Save checks),
// so the bytes are the ones a map's sorted partition ids made.
func appendSnapshot(b []byte, offsets record.Offsets, state []byte) []byte {
	b = append(b, snapshotVersion)
	b = binary.AppendUvarint(b, uint64(len(offsets)))
	for _, po := range offsets {
		b = binary.AppendUvarint(b, uint64(len(po.Partition)))
		b = append(b, po.Partition...)
		b = binary.AppendVarint(b, po.Offset)
	}
	return append(b, state...)
}

// decodeSnapshot decodes a value written by encodeSnapshot. The returned
// state aliases b; offsets are in order (nil when there are none), a
// partition id twice is corrupt.
func decodeSnapshot(b []byte) (offsets record.Offsets, state []byte, err error) {
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
	if n > 0 {
		offsets = make(record.Offsets, 0, n)
	}
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
		offsets = append(offsets, record.PartitionOffset{Partition: p, Offset: o})
	}
	if err := record.SortOffsets(offsets); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	return offsets, b, nil
}
