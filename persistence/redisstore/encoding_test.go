package redisstore

import (
	"bytes"
	"encoding/hex"
	"errors"
	"slices"
	"testing"

	"github.com/joinery/joinery/record"
)

// TestStoreRedisSnapshotEncoding: a snapshot value has the bytes the code
// that kept offsets in a map wrote (hex from it), offsets written out of
// order decode in order, and a partition twice is corrupt.
func TestStoreRedisSnapshotEncoding(t *testing.T) {
	two := record.Offsets{{Partition: "domains/3", Offset: -1}, {Partition: "users/0", Offset: 17}}
	for _, tc := range []struct {
		offsets record.Offsets
		state   string
		hex     string
	}{
		{two, "state", "010209646f6d61696e732f33010775736572732f30227374617465"},
		{nil, "s", "010073"},
	} {
		b := encodeSnapshot(tc.offsets, []byte(tc.state))
		if got := hex.EncodeToString(b); got != tc.hex {
			t.Errorf("encodeSnapshot(%v, %q) = %s, want %s", tc.offsets, tc.state, got, tc.hex)
		}
		offsets, state, err := decodeSnapshot(b)
		if err != nil || !slices.Equal(offsets, tc.offsets) || string(state) != tc.state {
			t.Errorf("decodeSnapshot(%s) = %v %q, %v", tc.hex, offsets, state, err)
		}
	}
	offsets, state, err := decodeSnapshot(unsortedValue("users/0", 17, "domains/3", -1))
	if err != nil || !slices.Equal(offsets, two) || !bytes.Equal(state, []byte("s")) {
		t.Errorf("value with offsets out of order = %v %q, %v; want %v", offsets, state, err, two)
	}
	if offsets, _, err := decodeSnapshot(unsortedValue("p/0", 1, "p/0", 2)); !errors.Is(err, errCorrupt) {
		t.Errorf("value with a partition twice = %v, %v; want errCorrupt", offsets, err)
	}
}
