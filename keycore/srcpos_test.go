package keycore

import (
	"strings"
	"testing"
)

func TestSrcPos(t *testing.T) {
	for _, c := range []struct {
		pos  string
		size int // stored bytes
	}{
		{"pg/00000000000023456789", 6},
		{"pg/18446744073709551615", 12},
		{"pg/18446744073709551616", 23}, // over uint64: kept as text
		{"pg/123", 6},                   // not 20 digits: text
		{"mongo/00000001700000000000/0000000003", 9},
		{"mysql/binlog.000003/00000000000000004567/0000000001", 19},
		{"mysql/a/b/00000000000000004567/0000000001", 9},
		{"sqlserver/00000025:00000d28:0003/00000025:00000d28:0002/0000000002", 66},
		{"oracle/000000000000000000123456", 31},
		{"", 0},
		{"00000042", 8},
		{"ts/00000001700000000000", 8},                          // a versioned side's version
		{"ts/00000001700000000000/pg/00000000000023456789", 47}, // with a Debezium position: text
	} {
		b := appendSrcPos(nil, c.pos)
		if len(b) != c.size {
			t.Errorf("%q: %d bytes stored, want %d", c.pos, len(b), c.size)
		}
		got, ok := srcPos(b)
		if !ok || got != c.pos {
			t.Errorf("%q: decoded %q, %v", c.pos, got, ok)
		}
	}
	for _, bad := range [][]byte{{srcTag}, {srcTag, 9}, {srcTag, 1}, {srcTag, 1, 5, 0}, {srcTag, 3, 9, 'a'}, {srcTag, 4}, {srcTag, 4, 1, 2}, {srcTag, 2, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f}} {
		if got, ok := srcPos(bad); ok {
			t.Errorf("% x decoded to %q", bad, got)
		}
	}
}

// FuzzSrcPos: every position text round-trips through its stored form,
// and a stored form that decodes encodes back to itself.
func FuzzSrcPos(f *testing.F) {
	f.Add("pg/00000000000023456789")
	f.Add("mongo/00000001700000000000/0000000003")
	f.Add("mysql/binlog.000003/00000000000000004567/0000000001")
	f.Add("x")
	f.Fuzz(func(t *testing.T, s string) {
		if got, ok := srcPos(appendSrcPos(nil, s)); !ok || got != s {
			t.Fatalf("%q: decoded %q, %v", s, got, ok)
		}
		if pos, ok := srcPos([]byte(s)); ok {
			if again, ok := srcPos(appendSrcPos(nil, pos)); !ok || again != pos {
				t.Fatalf("%q: %q re-encoded decodes to %q", s, pos, again)
			}
		}
	})
}

// TestRowPos: a row part's position, in either framing, comes back
// exactly, with the row after it.
func TestRowPos(t *testing.T) {
	for _, c := range []struct {
		pos  string
		size int // framing bytes
	}{
		{"", 0},
		{"pg/00000000000023456789", 5},
		{"pg/18446744073709551615", 11},
		{"pg/123", 8},
		{"mongo/00000001700000000000/0000000003", 11},
	} {
		for _, row := range [][]byte{nil, []byte("\xc1\x00"), []byte(`{"a":1}`)} {
			v := withPos(c.pos, row)
			if len(v)-len(row) != c.size {
				t.Errorf("%q: %d bytes of framing, want %d", c.pos, len(v)-len(row), c.size)
			}
			pos, got, err := splitPos(v)
			if err != nil || pos != c.pos || string(got) != string(row) {
				t.Errorf("%q, %q: split to %q, %q, %v", c.pos, row, pos, got, err)
			}
		}
	}
	for _, bad := range [][]byte{{pgTag}, {pgTag, 0x80}, {posTag}, {posTag, 0}, {posTag, 5, srcTag}} {
		if pos, _, err := splitPos(bad); err == nil {
			t.Errorf("% x split to %q", bad, pos)
		}
	}
}

// TestAppendPos: a position's framing written in place, after bytes
// already in the buffer and with a length of more than one varint byte,
// splits back to the position.
func TestAppendPos(t *testing.T) {
	long := "sqlserver/" + strings.Repeat("0", 200)
	for _, pos := range []string{"", "pg/00000000000000000042", "x", long} {
		b := appendPos([]byte("head"), pos)
		got, row, err := splitPos(append(b[4:], "\xc1\x00"...))
		if err != nil || got != pos || string(row) != "\xc1\x00" || string(b[:4]) != "head" {
			t.Errorf("%q: split to %q, % x, %v", pos, got, row, err)
		}
		if w := withPos(pos, []byte("\xc1\x00")); string(w) != string(append(b[4:len(b):len(b)], "\xc1\x00"...)) {
			t.Errorf("%q: withPos % x, appendPos % x", pos, w, b[4:])
		}
	}
}

// TestVersionPos: a versioned side's positions round-trip and order by time
// then Debezium position; a negative time counts as 0.
func TestVersionPos(t *testing.T) {
	for _, c := range []struct {
		ts   int64
		pos  string
		want string
	}{
		{5, "", "ts/00000000000000000005"},
		{-3, "", "ts/00000000000000000000"},
		{1700000000000, "pg/00000000000000000042", "ts/00000001700000000000/pg/00000000000000000042"},
	} {
		got := versionPos(c.ts, c.pos)
		if got != c.want {
			t.Errorf("versionPos(%d, %q) = %q, want %q", c.ts, c.pos, got, c.want)
		}
		ts, pos, ok := parseVersion(got)
		if !ok || ts != max(c.ts, 0) || pos != c.pos {
			t.Errorf("parseVersion(%q) = %d, %q, %v", got, ts, pos, ok)
		}
	}
	for _, bad := range []string{"", "pg/00000000000000000005", "ts/5", "ts/0000000000000000000x", "ts/00000000000000000005x", "ts/99999999999999999999"} {
		if _, _, ok := parseVersion(bad); ok {
			t.Errorf("parseVersion(%q) accepted", bad)
		}
	}
}
