package redisstore

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/joinery/joinery/record"
)

// FuzzRedisSnapshotDecode: decoding arbitrary bytes never panics, what
// decodes has its offsets in order, and it re-encodes to a value that
// decodes the same.
func FuzzRedisSnapshotDecode(f *testing.F) {
	f.Add(encodeSnapshot(record.Offsets{{Partition: "domains/3", Offset: -1}, {Partition: "users/0", Offset: 17}}, []byte("state")))
	f.Add(encodeSnapshot(nil, []byte{0}))
	f.Add(unsortedValue("users/0", 17, "domains/3", -1))
	f.Add(unsortedValue("p/0", 1, "p/0", 2))
	f.Add([]byte{})
	f.Add([]byte{snapshotVersion})
	f.Add([]byte{snapshotVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{2, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		offsets, state, err := decodeSnapshot(b)
		if err != nil {
			return
		}
		if err := offsets.Check(); err != nil {
			t.Fatalf("decoded offsets %v: %v", offsets, err)
		}
		o2, s2, err := decodeSnapshot(encodeSnapshot(offsets, state))
		if err != nil {
			t.Fatalf("decode of re-encoded value: %v", err)
		}
		if !slices.Equal(o2, offsets) || !bytes.Equal(s2, state) {
			t.Fatalf("round trip: %v %q, want %v %q", o2, s2, offsets, state)
		}
	})
}

// FuzzRedisSnapshotRoundTrip: encode then decode gives back the input, and
// the encoding is canonical.
func FuzzRedisSnapshotRoundTrip(f *testing.F) {
	f.Add("p/0", int64(5), "q/1", int64(-1), []byte("state"))
	f.Add("", int64(1<<63-1), "", int64(-1<<63), []byte{})
	f.Fuzz(func(t *testing.T, p1 string, o1 int64, p2 string, o2 int64, state []byte) {
		offsets := record.OffsetsOf(map[string]int64{p1: o1, p2: o2})
		b := encodeSnapshot(offsets, state)
		got, gotState, err := decodeSnapshot(b)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, offsets) || !bytes.Equal(gotState, state) {
			t.Fatalf("round trip: %v %q, want %v %q", got, gotState, offsets, state)
		}
		if !bytes.Equal(encodeSnapshot(got, gotState), b) {
			t.Fatal("encoding is not canonical")
		}
	})
}

// unsortedValue is a version 1 value with two offsets in the order given
// (encodeSnapshot writes them in order), and state "s".
func unsortedValue(p1 string, o1 int64, p2 string, o2 int64) []byte {
	b := []byte{snapshotVersion, 2}
	for _, po := range []record.PartitionOffset{{Partition: p1, Offset: o1}, {Partition: p2, Offset: o2}} {
		b = binary.AppendUvarint(b, uint64(len(po.Partition)))
		b = append(b, po.Partition...)
		b = binary.AppendVarint(b, po.Offset)
	}
	return append(b, 's')
}
