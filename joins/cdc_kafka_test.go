package joins

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/joinery/joinery/record"
)

// TestCDCKafkaKinds checks KindsKafka step by step: each output is one of
// Kafka Streams' Change(new, old), so a padded row that a match replaces,
// or that replaces the last match, is one -U/+U pair (KindsUpdate: -D then
// +I); everything else is as KindsUpdate.
func TestCDCKafkaKinds(t *testing.T) {
	u1, u1b := user(1, "Egor"), user(1, "Egor M")
	d1, d1b, d2 := domain(1, 1, "Approval"), domain(1, 1, "Approved"), domain(2, 1, "Rejection")
	for _, c := range []struct {
		name  string
		typ   JoinType
		steps []step
		want  []string
	}{
		{"inner: as update", Inner, []step{L(ins(u1)), R(ins(d1)), L(upd(u1, u1b)), R(upd(d1, d1b)), R(del(d1b))}, []string{
			"+I [1,1] Egor/Approval",
			"-U [1,1] Egor/Approval", "+U [1,1] Egor M/Approval",
			"-U [1,1] Egor M/Approval", "+U [1,1] Egor M/Approved",
			"-D [1,1] Egor M/Approved"}},
		{"left: padded row to match and back is -U/+U", LeftOuter, []step{L(ins(u1)), R(ins(d1)), R(ins(d2)), R(del(d1)), R(del(d2)), L(upd(u1, u1b)), L(del(u1b))}, []string{
			"+I [1,null] Egor/null",
			"-U [1,null] Egor/null", "+U [1,1] Egor/Approval",
			"+I [1,2] Egor/Rejection",
			"-D [1,1] Egor/Approval",
			"-U [1,2] Egor/Rejection", "+U [1,null] Egor/null",
			"-U [1,null] Egor/null", "+U [1,null] Egor M/null",
			"-D [1,null] Egor M/null"}},
		{"full: right padded row to match and back is -U/+U", FullOuter, []step{R(ins(d1)), L(ins(u1)), L(upd(u1, u1b)), L(del(u1b)), R(del(d1))}, []string{
			"+I [null,1] null/Approval",
			"-U [null,1] null/Approval", "+U [1,1] Egor/Approval",
			"-U [1,1] Egor/Approval", "+U [1,1] Egor M/Approval",
			"-U [1,1] Egor M/Approval", "+U [null,1] null/Approval",
			"-D [null,1] null/Approval"}},
		{"right: right padded row to match and back is -U/+U", RightOuter, []step{R(ins(d1)), L(ins(u1)), R(ins(d2)), L(upd(u1, u1b)), L(del(u1b)), R(del(d1))}, []string{
			"+I [null,1] null/Approval",
			"-U [null,1] null/Approval", "+U [1,1] Egor/Approval",
			"+I [1,2] Egor/Rejection",
			"-U [1,1] Egor/Approval", "+U [1,1] Egor M/Approval",
			"-U [1,2] Egor/Rejection", "+U [1,2] Egor M/Rejection",
			"-U [1,1] Egor M/Approval", "+U [null,1] null/Approval",
			"-U [1,2] Egor M/Rejection", "+U [null,2] null/Rejection",
			"-D [null,1] null/Approval"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := projSpec(c.typ)
			s.Kinds = KindsKafka
			h := newHarness(t, s)
			eqLines(t, "outputs", fmtAll(t, h.apply(c.steps...)), c.want)
		})
	}
}

// TestCDCKafkaKindsVsUpdate runs random changes through KindsUpdate and
// KindsKafka: the same rows, keys and order, with kinds that differ only
// where the update convention has a -D then +I of a padded row and its
// match (or back), which Kafka's makes -U/+U; both fold to the same table
// (the harness applies every output to a strict table).
func TestCDCKafkaKindsVsUpdate(t *testing.T) {
	for _, typ := range []JoinType{Inner, LeftOuter, RightOuter, FullOuter} {
		t.Run(typ.String(), func(t *testing.T) {
			ks := projSpec(typ)
			ks.Kinds = KindsKafka
			def, kf := newHarness(t, projSpec(typ)), newHarness(t, ks)
			swaps := 0
			for _, s := range randomCDCSteps(rand.New(rand.NewPCG(5, uint64(typ))), 800) {
				a, b := def.apply(s), kf.apply(s)
				if len(a) != len(b) {
					t.Fatalf("after %+v: %d outputs, update gives %d", s, len(b), len(a))
				}
				for i := 0; i < len(a); i++ {
					if a[i].PK != b[i].PK || fmt.Sprint(a[i].Row) != fmt.Sprint(b[i].Row) || a[i].ID != b[i].ID {
						t.Fatalf("after %+v: output %d is %+v, update gives %+v", s, i, b[i], a[i])
					}
					if a[i].Kind == b[i].Kind {
						continue
					}
					// The only change: a -D then +I pair, one side padded in exactly one of them.
					padded := func(pk string) bool { return pk[1] == 'n' || pk[len(pk)-2] == 'l' }
					if i+1 >= len(a) || a[i].Kind != record.Delete || a[i+1].Kind != record.Insert ||
						b[i].Kind != record.UpdateBefore || b[i+1].Kind != record.UpdateAfter ||
						padded(a[i].PK) == padded(a[i+1].PK) {
						t.Fatalf("after %+v: output %d kind %v, update gives %v", s, i, b[i].Kind, a[i].Kind)
					}
					if typ == Inner {
						t.Fatalf("an inner join has no padded row, yet %v became %v", a[i].Kind, b[i].Kind)
					}
					swaps++
					i++ // the pair's +I/+U, checked above
				}
				if fmt.Sprint(tableMapOf(def.table)) != fmt.Sprint(tableMapOf(kf.table)) {
					t.Fatalf("after %+v: tables differ", s)
				}
			}
			if typ != Inner && swaps == 0 {
				t.Error("no padded row turned into a match: the input does not test the difference")
			}
			t.Logf("%d -D/+I pairs became -U/+U", swaps)
		})
	}
}
