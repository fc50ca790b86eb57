package joins

import (
	"strings"
	"testing"
)

// TestJoinUnbounded: rows match whatever their time difference while the
// earlier one is kept (until the watermark passes ts + TTL); an unmatched
// outer row is padded when it expires.
func TestJoinUnbounded(t *testing.T) {
	spec := &UnboundedSpec{Type: TimedLeftOuter, Left: "l", Right: "r", TTL: 10}
	d := newDriver(t, func() Timed { return NewUnbounded(spec) })
	d.vscript(VE(lt, 0, "a", 0), VE(rt, 100, "x", 0)) // 100 ms apart, both kept: a match
	d.vscript(VE(lt, 105, "b", 0))                    // x is kept until the watermark passes 110: b matches it
	d.vscript(VW(111))                                // a, x and b expire; a and b matched: not padded
	d.vscript(VE(lt, 120, "c", 0), VW(130))           // nothing to meet; kept until the watermark passes 130
	d.vscript(VW(131), VE(rt, 140, "y", 0))           // c expired unmatched: padded; y meets nothing
	d.vscript(VW(200))
	got := strings.Join(fmtPairs(t, "l", "r", d.take()), " ")
	if want := "100 a,x 105 b,x 120 c,-"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if !d.j.Empty() || len(d.late) != 0 {
		t.Fatalf("state %q late %v", d.j.Snapshot(), fmtLate(d.late))
	}
	if err := (&UnboundedSpec{Left: "l", Right: "r"}).Validate(); err == nil || !strings.Contains(err.Error(), "ttl: must be positive") {
		t.Errorf("ttl 0: %v", err)
	}
}
