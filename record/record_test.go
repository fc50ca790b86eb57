package record

import (
	"strconv"
	"strings"
	"testing"
)

// TestOutputID: the id is the position, key, event seq and output index
// joined by '/', as Position.String writes the position.
func TestOutputID(t *testing.T) {
	long := strings.Repeat("k", 200)
	for _, c := range []struct {
		e    Event
		n    int
		want string
	}{
		{Event{Key: "1", Pos: Position{Source: "cdc", Partition: 0, Offset: 7}}, 0, "cdc/0@7/1/0/0"},
		{Event{Key: "é/x", Seq: 1, Pos: Position{Source: "s", Partition: -3, Offset: -1}}, 12, "s/-3@-1/é/x/1/12"},
		{Event{Key: Key(long), Seq: 2, Pos: Position{Source: "src", Partition: 2147483647, Offset: 9223372036854775807}}, 3,
			"src/2147483647@9223372036854775807/" + long + "/2/3"},
	} {
		want := c.e.Pos.String() + "/" + string(c.e.Key) + "/" + strconv.Itoa(c.e.Seq) + "/" + strconv.Itoa(c.n)
		if want != c.want {
			t.Fatalf("table: %q is not %q", c.want, want)
		}
		if got := OutputID(c.e, c.n); got != c.want {
			t.Errorf("OutputID(%+v, %d) = %q, want %q", c.e.Pos, c.n, got, c.want)
		}
	}
}

// TestOpString checks that each op's code round-trips through ParseOp and
// costs no allocation (actors.EncodeRequest encodes one per event).
func TestOpString(t *testing.T) {
	for _, tc := range []struct {
		op   Op
		want string
	}{{OpCreate, "c"}, {OpRead, "r"}, {OpUpdate, "u"}, {OpDelete, "d"}, {Op('x'), "x"}} {
		if got := tc.op.String(); got != tc.want {
			t.Errorf("Op(%q).String() = %q, want %q", byte(tc.op), got, tc.want)
		}
		if op, ok := ParseOp(tc.want); ok != (tc.want != "x") || ok && op != tc.op {
			t.Errorf("ParseOp(%q) = %q, %v", tc.want, byte(op), ok)
		}
	}
	var sink string
	if n := testing.AllocsPerRun(100, func() { sink = OpUpdate.String() }); n != 0 {
		t.Errorf("OpUpdate.String() allocates %v times", n)
	}
	_ = sink
}
