package storetest

import (
	"fmt"
	"testing"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// The Owned* cases check who owns a saved snapshot's memory
// (persistence.Snapshot.Owned): a copying Save (the default) leaves the
// caller free to reuse every buffer once it returns, and an Owned one —
// whose bytes the caller never changes — round-trips like any other.
var ownedCases = []struct {
	name string
	fn   func(t *testing.T, s persistence.Store)
}{
	{"CopyingSaveIsolatesCaller", testCopyingSaveIsolatesCaller},
	{"OwnedRoundTrip", testOwnedRoundTrip},
}

// testCopyingSaveIsolatesCaller: after a Save without Owned returns, the
// caller overwrites the state's and the parts' memory it passed, whole
// and delta; Load still gives what was saved.
func testCopyingSaveIsolatesCaller(t *testing.T, s persistence.Store) {
	for _, delta := range []bool{false, true} {
		key := record.Key(fmt.Sprint("k-", delta))
		save(t, s, persistence.Snapshot{Job: "job", Key: key, State: []byte("b0"), Parts: parts("keep", "kept", "r:1", "old")})
		var m model
		m.apply(persistence.Snapshot{State: []byte("b0"), Parts: parts("keep", "kept", "r:1", "old")})

		sn := persistence.Snapshot{Job: "job", Key: key, State: []byte("base"), Delta: delta,
			Parts: parts("r:1", "one", "r:2", "two"), Offsets: record.OffsetsOf(map[string]int64{"p/0": 3})}
		save(t, s, sn)
		m.apply(persistence.Snapshot{State: []byte("base"), Delta: delta, Parts: parts("r:1", "one", "r:2", "two")})
		sn.State[0] = 'X'
		for i := range sn.Parts {
			sn.Parts[i].Value[0] = 'X'
		}
		sn.Parts[0] = persistence.Part{Name: "r:9", Value: []byte("nine")}
		checkModel(t, s, "job", key, &m, record.OffsetsOf(map[string]int64{"p/0": 3}))
	}
}

// testOwnedRoundTrip: Owned snapshots — whole with and without parts,
// deltas, a timer, a delete, a fenced one — load, list and index as the
// same snapshots saved without Owned do to another key; the caller may
// reuse the batch and the Parts slice (not their bytes) once Save returns.
func testOwnedRoundTrip(t *testing.T, s persistence.Store) {
	owned, plain := record.Key("owned"), record.Key("plain")
	eo, ep := acquire(t, s, "job", owned), acquire(t, s, "job", plain)
	steps := []persistence.Snapshot{
		{State: []byte("b1")},
		{State: []byte("b2"), Parts: parts("l", "user", "r:1", "d1", "r:2", "d2"), HasTimer: true, NextTimer: 40},
		{State: []byte("b3"), Delta: true, Parts: parts("r:1", "d1'", "r:2", "", "r:3", "d3")},
		{State: []byte("b4"), Delta: true, Parts: parts("r:4", "d4"), HasTimer: true, NextTimer: 10},
		{},
		{State: []byte("b5"), Delta: true, Parts: parts("r:5", "d5")},
		{State: []byte("b6"), Parts: parts("r:6", "d6")},
	}
	for i, step := range steps {
		offsets := record.Offsets{{Partition: "p/0", Offset: int64(i)}}
		o := step
		o.Job, o.Key, o.Epoch, o.Owned, o.Offsets = "job", owned, eo, true, offsets
		o.Parts = clonedPartValues(step.Parts)
		p := step
		p.Job, p.Key, p.Epoch, p.Offsets = "job", plain, ep, offsets
		batch := []persistence.Snapshot{o, p}
		save(t, s, batch...)
		if len(o.Parts) > 0 {
			o.Parts[0] = persistence.Part{Name: "r:9", Value: []byte("reused slice")}
		}
		batch[0].Key = "reused batch"

		a, erra := s.Load(ctx(t), "job", owned)
		b, errb := s.Load(ctx(t), "job", plain)
		if string(a.State) != string(b.State) || (erra == nil) != (errb == nil) {
			t.Fatalf("step %d: the Owned key loads %q (%v), the copied one %q (%v)", i, a.State, erra, b.State, errb)
		}
		if errb == nil {
			checkSnapshot(t, a, persistence.Snapshot{Job: "job", Key: owned, State: b.State, Offsets: offsets})
		}
		var want []persistence.TimerDue
		if len(step.State) > 0 && step.HasTimer {
			want = []persistence.TimerDue{{Key: owned, At: step.NextTimer}, {Key: plain, At: step.NextTimer}}
		}
		if got := dueTimers(t, s, "job", 100, 10); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("step %d: DueTimers = %v, want %v", i, got, want)
		}
	}
	checkKeys(t, s, "job", "owned", "plain")

	stale := persistence.Snapshot{Job: "job", Key: owned, State: []byte("stale"), Epoch: eo - 1, Owned: true}
	checkFenced(t, s.Save(ctx(t), []persistence.Snapshot{stale}),
		persistence.FencedError{Job: "job", Key: owned, Epoch: eo - 1, Holder: eo})
	if got := load(t, s, "job", owned); string(got.State) == "stale" {
		t.Fatalf("a fenced Owned snapshot was written: %q", got.State)
	}
}

// clonedPartValues is parts with values of their own, so that a test that
// saves parts twice hands each Save its own bytes.
func clonedPartValues(ps []persistence.Part) []persistence.Part {
	if ps == nil {
		return nil
	}
	out := make([]persistence.Part, len(ps))
	for i, p := range ps {
		out[i] = persistence.Part{Name: p.Name, Value: append([]byte(nil), p.Value...)}
	}
	return out
}
