package redisstore

import (
	"bytes"
	"maps"
	"testing"
)

// FuzzRedisSnapshotDecode: decoding arbitrary bytes never panics, and what
// decodes re-encodes to a value that decodes the same.
func FuzzRedisSnapshotDecode(f *testing.F) {
	f.Add(encodeSnapshot(map[string]int64{"users/0": 17, "domains/3": -1}, []byte("state")))
	f.Add(encodeSnapshot(nil, []byte{0}))
	f.Add([]byte{})
	f.Add([]byte{snapshotVersion})
	f.Add([]byte{snapshotVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{2, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		offsets, state, err := decodeSnapshot(b)
		if err != nil {
			return
		}
		o2, s2, err := decodeSnapshot(encodeSnapshot(offsets, state))
		if err != nil {
			t.Fatalf("decode of re-encoded value: %v", err)
		}
		if !maps.Equal(o2, offsets) || !bytes.Equal(s2, state) {
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
		offsets := map[string]int64{p1: o1, p2: o2}
		b := encodeSnapshot(offsets, state)
		got, gotState, err := decodeSnapshot(b)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, offsets) || !bytes.Equal(gotState, state) {
			t.Fatalf("round trip: %v %q, want %v %q", got, gotState, offsets, state)
		}
		if !bytes.Equal(encodeSnapshot(got, gotState), b) {
			t.Fatal("encoding is not canonical")
		}
	})
}
