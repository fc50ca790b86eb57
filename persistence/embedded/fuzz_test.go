package embedded

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"maps"
	"slices"
	"testing"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// FuzzEmbeddedLogDecode feeds arbitrary bytes to the log replay: it must
// never panic, and every record it accepts must re-encode to a record that
// decodes to the same value.
func FuzzEmbeddedLogDecode(f *testing.F) {
	f.Add([]byte(logMagic))
	f.Add([]byte("JNRY"))
	f.Add([]byte("JNRYLOG\x02"))
	seed := []byte(logMagic)
	for _, r := range []logRecord{
		{kind: kindSave, snaps: []persistence.Snapshot{
			{Job: "job", Key: "k", State: []byte("state"), Offsets: record.OffsetsOf(map[string]int64{"p/0": 7, "p/1": -1})},
			{Job: "job", Key: "gone"},
		}},
		{kind: kindCommit, job: "job", offsets: map[string]int64{"p/0": 1 << 62}},
		{kind: kindEpoch, epochs: []epochEntry{{job: "job", key: "k", epoch: 3}, {job: "", key: "", epoch: 1<<63 - 1}}},
		{kind: kindLineage, job: "job", lin: persistence.Lineage{Incarnation: "0123abcd", Floor: 1 << 60, Seq: 9}, offsets: map[string]int64{"p/0": 4}},
		{kind: kindLineage, job: "", lin: persistence.Lineage{Incarnation: "x"}},
		{kind: kindSave, snaps: []persistence.Snapshot{ // written as kind 4
			{Job: "job", Key: "t", State: []byte("s"), Offsets: record.OffsetsOf(map[string]int64{}), HasTimer: true, NextTimer: -1},
			{Job: "job", Key: "max", State: []byte("s"), HasTimer: true, NextTimer: persistence.MaxTimer},
			{Job: "job", Key: "none", State: []byte("s")},
			{Job: "job", Key: "gone"},
		}},
		{kind: kindSave, snaps: []persistence.Snapshot{ // written as kind 6
			{Job: "job", Key: "p", State: []byte("base"), Parts: []persistence.Part{{Name: "r:1", Value: []byte("row")}}},
			{Job: "job", Key: "d", State: []byte("base"), Delta: true, HasTimer: true, NextTimer: 5,
				Parts: []persistence.Part{{Name: "r:1"}, {Name: "o:2", Value: []byte("out")}}},
			{Job: "job", Key: "gone"},
		}},
	} {
		var err error
		if seed, err = encodeRecord(seed, r); err != nil {
			f.Fatal(err)
		}
		f.Add(bytes.Clone(seed))
	}
	f.Add(seed[:len(seed)-3])
	// A kind 4 record with a bad timer flag, and one with a timer beyond 2^53.
	for _, tail := range [][]byte{{2}, {1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}} {
		payload := append([]byte{kindSaveTimers, 1, 1, 'j', 1, 'k', 1, 's', 0}, tail...)
		b := append([]byte(logMagic), make([]byte, frameHeader)...)
		binary.LittleEndian.PutUint32(b[len(logMagic):], uint32(len(payload)))
		binary.LittleEndian.PutUint32(b[len(logMagic)+4:], crc32.Checksum(payload, crcTable))
		f.Add(append(b, payload...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var recs []logRecord
		valid, err := replay(b, func(r logRecord) { recs = append(recs, r) })
		if valid < 0 || valid > int64(len(b)) {
			t.Fatalf("valid prefix %d outside [0, %d]", valid, len(b))
		}
		if err != nil {
			return
		}
		for _, r := range recs {
			enc, err := encodeRecord(nil, r)
			if err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			got, err := decodePayload(enc[frameHeader:])
			if err != nil {
				t.Fatalf("decode of re-encoded record: %v", err)
			}
			checkRecord(t, got, r)
		}
		// Replaying the valid prefix alone gives the same records.
		n := 0
		if _, err := replay(b[:valid], func(logRecord) { n++ }); err != nil || n != len(recs) {
			t.Fatalf("replay of the valid prefix: %d records, %v; want %d", n, err, len(recs))
		}
	})
}

// FuzzEmbeddedLogRoundTrip builds records from fuzzed fields and checks that
// they survive encode and decode. kind picks the record: 0 save, 1 commit,
// 2 epochs (off, clamped to at least 1, is the epoch), 3 save with a timer
// (off, clamped to [MinTimer, MaxTimer], is the timer), 4 lineage (key is
// the incarnation, |off| floor and seq), 5 save with parts (part and key
// name a part set to state and one deleted; off's parity says delta).
func FuzzEmbeddedLogRoundTrip(f *testing.F) {
	f.Add("job", "key", []byte("state"), "p/0", int64(5), uint8(0))
	f.Add("", "", []byte{}, "", int64(-1<<63), uint8(1))
	f.Add("job", "k", []byte{}, "", int64(1<<63-1), uint8(2))
	f.Add("job", "k", []byte("s"), "p/0", int64(-1<<63), uint8(3))
	f.Add("job", "k", []byte("s"), "p/0", int64(0), uint8(3))
	f.Add("job", "inc", []byte{}, "p/0", int64(1<<60), uint8(4))
	f.Add("job", "k", []byte("row"), "r:1", int64(2), uint8(5))
	f.Fuzz(func(t *testing.T, job, key string, state []byte, part string, off int64, kind uint8) {
		r := logRecord{kind: kindSave, snaps: []persistence.Snapshot{
			{Job: job, Key: record.Key(key), State: state, Offsets: record.OffsetsOf(map[string]int64{part: off})},
			{Job: key, Key: record.Key(job), Offsets: record.OffsetsOf(map[string]int64{})},
		}}
		if len(state) == 0 {
			r.snaps[0].State = nil
		}
		switch kind % 6 {
		case 5:
			if part == "" {
				part = "p"
			}
			r.snaps[0].Delta = off%2 == 0
			r.snaps[0].Parts = []persistence.Part{{Name: part, Value: state}, {Name: key + "x"}}
		case 4:
			if key == "" {
				key = "i"
			}
			a := max(off, -off, 0) // -(-1<<63) overflows back negative: then 0
			r = logRecord{kind: kindLineage, job: job, lin: persistence.Lineage{Incarnation: key, Floor: a, Seq: a / 2},
				offsets: map[string]int64{part: off}}
		case 1:
			r = logRecord{kind: kindCommit, job: job, offsets: map[string]int64{part: off, key: -off}}
		case 2:
			r = logRecord{kind: kindEpoch, epochs: []epochEntry{{job: job, key: record.Key(key), epoch: max(off, 1)},
				{job: part, key: record.Key(job), epoch: 1}}}
		case 3:
			r.snaps[0].HasTimer = true
			r.snaps[0].NextTimer = min(max(off, persistence.MinTimer), persistence.MaxTimer)
		}
		b, err := encodeRecord([]byte(logMagic), r)
		if err != nil {
			t.Fatal(err)
		}
		if n := binary.LittleEndian.Uint32(b[len(logMagic):]); int(n) != len(b)-len(logMagic)-frameHeader {
			t.Fatalf("frame length %d for a %d-byte payload", n, len(b)-len(logMagic)-frameHeader)
		}
		var got []logRecord
		if _, err := replay(b, func(r logRecord) { got = append(got, r) }); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("replay gave %d records, want 1", len(got))
		}
		checkRecord(t, got[0], r)
	})
}

func checkRecord(t *testing.T, got, want logRecord) {
	t.Helper()
	if got.kind != want.kind || got.job != want.job || !maps.Equal(got.offsets, want.offsets) || len(got.snaps) != len(want.snaps) ||
		!slices.Equal(got.epochs, want.epochs) || got.lin != want.lin {
		t.Fatalf("record = %+v, want %+v", got, want)
	}
	for i := range want.snaps {
		g, w := got.snaps[i], want.snaps[i]
		if g.Job != w.Job || g.Key != w.Key || !bytes.Equal(g.State, w.State) || !slices.Equal(g.Offsets, w.Offsets) ||
			g.HasTimer != w.HasTimer || (w.HasTimer && g.NextTimer != w.NextTimer) || g.Delta != w.Delta ||
			!slices.EqualFunc(g.Parts, w.Parts, func(a, b persistence.Part) bool { return a.Name == b.Name && bytes.Equal(a.Value, b.Value) }) {
			t.Fatalf("snapshot %d = %+v, want %+v", i, g, w)
		}
	}
}
