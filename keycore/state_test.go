package keycore

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"unsafe"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/record"
)

// TestEncodeStateCachedOutbox: the cached outbox encoding writes exactly
// the bytes encoding/json writes for the whole state, before and after the
// cache is filled, and the state decodes back.
func TestEncodeStateCachedOutbox(t *testing.T) {
	wm := int64(42)
	out := record.Output{ID: "x|1", Kind: record.Insert, PK: `["1"]`, Row: record.Row{"a": json.Number("1"), "b": "<&>"}}
	s := keyState{Join: []byte{1, '{', '}'}, Timers: []int64{5, 9}, Wm: &wm, Src: map[string]string{"l/1": "p"},
		Outbox: []outboxEntry{{Part: "cdc/0", Offset: 3, Outputs: []record.Output{out}}, {Part: "cdc/0", Offset: 4}}, Seq: 77}
	plain, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		b, err := encodeState(s)
		if err != nil {
			t.Fatal(err)
		}
		if string(b[1:]) != string(plain) {
			t.Fatalf("write %d:\n%s\nwant\n%s", i, b[1:], plain)
		}
		if s.Outbox[0].enc == nil {
			t.Fatal("outbox entry not cached")
		}
		back, err := decodeState(b, nil)
		if err != nil || len(back.Outbox) != 2 || back.Outbox[0].Outputs[0].ID != "x|1" || *back.Wm != 42 {
			t.Fatalf("decode: %+v %v", back, err)
		}
	}
}

// TestOutboxEntryFastPath: entries of decoded JSON rows take the
// reflection-free path, byte-equal to json.Marshal; others fall back.
func TestOutboxEntryFastPath(t *testing.T) {
	for _, c := range []struct {
		e    outboxEntry
		fast bool
	}{
		{outboxEntry{Part: "p", Offset: 1, Outputs: []record.Output{{ID: "i", PK: "[1]", Row: record.Row{"a": "b", "n": 1.25}, Seq: 3}}}, true},
		{outboxEntry{Part: "p", Offset: 1}, true},
		{outboxEntry{Part: "p", Offset: 1, Outputs: []record.Output{{ID: "<", PK: "[1]"}}}, true},
		{outboxEntry{Part: "p&q", Offset: 1, Outputs: []record.Output{{ID: "i>", PK: `["<&>"]`, Row: record.Row{"u&v": "https://x/?a=1&b=<2>", "n": 1.5}},
			{ID: "j", PK: "[2]", Row: record.Row{"a": "b"}}}}, true},
		{outboxEntry{Part: "p", Offset: 1, Outputs: []record.Output{{ID: "i", PK: "[1]", Row: record.Row{"x": int64(1)}}}}, false},
	} {
		b, _, ok := appendOutboxEntry(nil, &c.e, nil)
		if ok != c.fast {
			t.Errorf("%+v: fast path %v, want %v", c.e, ok, c.fast)
		}
		if ok {
			want, _ := json.Marshal(&c.e)
			if string(b) != string(want) {
				t.Errorf("\n got %s\nwant %s", b, want)
			}
		}
	}
}

// TestOutboxEntryEscapedRows: an entry whose strings hold '<', '>' or
// '&' is encoded as json.Marshal encodes it (HTML escaping on), and its
// outputs get no RowJSON: a sink writes rows with HTML escaping off.
func TestOutboxEntryEscapedRows(t *testing.T) {
	outs := []record.Output{
		{ID: "a/1", PK: "[1]", Row: record.Row{"url": "https://x/?a=1&b=2"}},
		{ID: "a/2", PK: "[2]", Row: record.Row{"s": "plain"}},
	}
	e := outboxEntry{Part: "p", Offset: 7, Outputs: outs}
	want, err := json.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.encode()
	if err != nil || string(got) != string(want) {
		t.Fatalf("encode: %s, %v\nwant %s", got, err, want)
	}
	for i, o := range outs {
		if o.RowJSON != nil {
			t.Errorf("output %d: RowJSON %s, want none (escaped entry)", i, o.RowJSON)
		}
	}
	plain := []record.Output{{ID: "a/3", PK: "[3]", Row: record.Row{"s": "plain"}}}
	e = outboxEntry{Part: "p", Offset: 8, Outputs: plain}
	if _, err := e.encode(); err != nil || string(plain[0].RowJSON) != `{"s":"plain"}` {
		t.Errorf("plain entry: RowJSON %s, %v; want {\"s\":\"plain\"}", plain[0].RowJSON, err)
	}
}

// TestEncodeStateShapes: the hand-written encoding equals encoding/json's
// for states with any subset of fields.
func TestEncodeStateShapes(t *testing.T) {
	wm := int64(-5)
	for _, s := range []keyState{
		{},
		{Seq: 1},
		{Wm: &wm},
		{Timers: []int64{-1, 0, 1 << 62}},
		{Join: []byte{0, 1, 2, 250}, Src: map[string]string{"r/2": "\"x\\u003c", "l/1": "a"}},
		{Outbox: []outboxEntry{{Part: "p", Offset: -1}}, Seq: 18446744073709551615},
		{Outbox: []outboxEntry{{Part: "cdc/é", Offset: 9, Outputs: []record.Output{
			{ID: "a/1", Kind: record.UpdateBefore, PK: `[1,"x"]`, Row: record.Row{"f": 1.5e-9, "s": "tab\t\u2028", "n": nil, "l": []any{true, 2.0}}, Ts: -3, Seq: 4},
			{ID: "a/2", Kind: record.Delete, PK: `[null]`},
		}}, {Part: "cdc/é", Offset: 10, Outputs: []record.Output{
			{ID: "a/3", Kind: record.Insert, PK: `[2]`, Row: record.Row{"m": map[string]any{"z": "<b>"}}},
			{ID: "a/4", Kind: record.UpdateAfter, PK: `[3]`, Row: record.Row{"i": 7}}, // not a decoded JSON type: falls back
		}}}},
	} {
		plain, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		b, err := encodeState(s)
		if err != nil {
			t.Fatal(err)
		}
		if string(b[1:]) != string(plain) {
			t.Errorf("encodeState:\n%s\nwant\n%s", b[1:], plain)
		}
	}
}

// TestOutboxLeavesRowJSON: encoding an outbox entry leaves each output's
// row JSON on the outputs the Step returned (they share the entry's
// array), equal to the row encoded afresh; an entry that falls back to
// encoding/json (HTML escaping) leaves none.
func TestOutboxLeavesRowJSON(t *testing.T) {
	for _, c := range []struct {
		row  record.Row
		want bool
	}{
		{record.Row{"b": "x", "a": json.Number("1.50"), "c": nil, "d": []any{true, 2.5}}, true},
		{nil, true},
		{record.Row{"a": "<&>"}, false},
	} {
		outs := []record.Output{{ID: "i", PK: "[1]", Row: c.row, Seq: 3}, {ID: "j", PK: "[2]", Row: record.Row{"z": "y"}}}
		e := outboxEntry{Part: "p", Offset: 1, Outputs: outs[:2:2]}
		if _, err := e.encode(); err != nil {
			t.Fatal(err)
		}
		for i, o := range outs {
			if (o.RowJSON != nil) != c.want {
				t.Fatalf("%v: output %d RowJSON %q, want cached %v", c.row, i, o.RowJSON, c.want)
			}
			if o.RowJSON == nil {
				continue
			}
			fresh, _ := jsonenc.AppendValue(nil, map[string]any(o.Row))
			if string(o.RowJSON) != string(fresh) {
				t.Errorf("output %d RowJSON %s, want %s", i, o.RowJSON, fresh)
			}
			if cap(o.RowJSON) != len(o.RowJSON) {
				t.Errorf("output %d RowJSON can be appended to in place (cap %d > len %d)", i, cap(o.RowJSON), len(o.RowJSON))
			}
		}
	}
}

// TestOffsetsPartitionID: partitionID is Position.PartitionID, and the
// offsets' own string (no new one) when they hold the partition.
func TestOffsetsPartitionID(t *testing.T) {
	var o offsets
	o.Set("users/1", 5)
	o.Set("users/12", 6)
	o.Set("domains/1", 7)
	for _, tc := range []struct {
		pos  record.Position
		held bool
	}{
		{record.Position{Source: "users", Partition: 1}, true},
		{record.Position{Source: "users", Partition: 12}, true},
		{record.Position{Source: "domains", Partition: 1}, true},
		{record.Position{Source: "users", Partition: 2}, false},
		{record.Position{Source: "domain", Partition: 1}, false},
		{record.Position{Source: "users/1", Partition: 2}, false},
		{record.Position{Source: "", Partition: -3}, false},
		{record.Position{Source: "users", Partition: -1}, false},
	} {
		got := partitionID(o, tc.pos)
		if want := tc.pos.PartitionID(); got != want {
			t.Errorf("%+v: %q, want %q", tc.pos, got, want)
		}
		i := slices.IndexFunc(o, func(p record.PartitionOffset) bool { return p.Partition == got })
		if held := i >= 0; held != tc.held {
			t.Errorf("%+v: held %v, want %v", tc.pos, held, tc.held)
		}
		if i >= 0 && unsafe.StringData(got) != unsafe.StringData(o[i].Partition) {
			t.Errorf("%+v: a new string, not the offsets' own", tc.pos)
		}
	}
}

// TestBase: a parts state's binary base round-trips every field it holds,
// and bad bytes are refused, never half read.
func TestBase(t *testing.T) {
	wm := int64(-5)
	for name, s := range map[string]keyState{
		"empty":  {},
		"seq":    {Seq: 7358965884612608},
		"timers": {Timers: []int64{-3, 0, 1 << 40, 1<<40 + 1}, Wm: &wm},
		"join":   {Join: []byte("\x01{\"l\":null}"), Seq: 1},
	} {
		t.Run(name, func(t *testing.T) {
			b := encodeBase(s)
			got, err := decodeBase(b)
			if err != nil {
				t.Fatal(err)
			}
			if got.Seq != s.Seq || !slices.Equal(got.Timers, s.Timers) || !bytes.Equal(got.Join, s.Join) ||
				(got.Wm == nil) != (s.Wm == nil) || (s.Wm != nil && *got.Wm != *s.Wm) {
				t.Fatalf("decoded %+v, want %+v", got, s)
			}
			if via, err := decodeState(b, nil); err != nil || via.Seq != s.Seq {
				t.Fatalf("decodeState: %+v, %v", via, err)
			}
			for cut := 1; cut < len(b); cut++ {
				if _, err := decodeBase(b[:cut]); err == nil && cut > 2 {
					t.Fatalf("%x cut to %d bytes decoded", b, cut)
				}
			}
			if _, err := decodeBase(append(slices.Clone(b), 0)); err == nil {
				t.Fatalf("%x with a byte more decoded", b)
			}
		})
	}
	if _, err := decodeBase([]byte{baseVersion, 0x10}); err == nil {
		t.Fatal("an unknown flag decoded")
	}
	if n := len(encodeBase(keyState{Seq: 7358965884612608})); n > 10 {
		t.Fatalf("a changelog-join key's base takes %d bytes", n)
	}
}
