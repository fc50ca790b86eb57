package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/joinery/joinery/internal/stateparts"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// The Parts* cases check incremental writes (persistence.Snapshot, "Parts
// and deltas"): a delta then a Load gives what the whole snapshot would,
// under the same fencing, timer index and deletion rules.
var partsCases = []struct {
	name string
	fn   func(t *testing.T, s persistence.Store)
}{
	{"PartsWholeLoad", testPartsWholeLoad},
	{"PartsDeltaEqualsWhole", testPartsDeltaEqualsWhole},
	{"PartsDeltaOntoMissing", testPartsDeltaOntoMissing},
	{"PartsWholeReplacesParts", testPartsWholeReplacesParts},
	{"PartsDeleteAfterDeltas", testPartsDeleteAfterDeltas},
	{"PartsBatchOrder", testPartsBatchOrder},
	{"PartsFenced", testPartsFenced},
	{"PartsTimers", testPartsTimers},
	{"PartsMany", testPartsMany},
	{"PartsEmptyName", testPartsEmptyName},
	{"PartsMerge", testPartsMerge},
	{"LoadMany", testLoadMany},
	{"AcquireLoadMany", testAcquireLoadMany},
}

// model is a key's state as the contract defines it: a base and its parts.
type model struct {
	base  []byte
	parts map[string][]byte
}

// apply writes sn to m as the contract says.
func (m *model) apply(sn persistence.Snapshot) {
	if len(sn.State) == 0 {
		m.base, m.parts = nil, nil
		return
	}
	if !sn.Delta || m.parts == nil {
		m.parts = map[string][]byte{}
	}
	m.base = sn.State
	stateparts.Apply(m.parts, sn.Parts)
}

// state is what Load returns for m: the base alone without parts, else
// packed.
func (m *model) state() []byte {
	if len(m.parts) == 0 {
		return m.base
	}
	var ps []persistence.Part
	for _, n := range slices.Sorted(maps.Keys(m.parts)) {
		ps = append(ps, persistence.Part{Name: n, Value: m.parts[n]})
	}
	return stateparts.Pack(m.base, ps)
}

func parts(kv ...string) []persistence.Part {
	var out []persistence.Part
	for i := 0; i < len(kv); i += 2 {
		out = append(out, persistence.Part{Name: kv[i], Value: []byte(kv[i+1])})
	}
	return out
}

// checkModel fails unless Load(job, key) is m's state with offsets.
func checkModel(t *testing.T, s persistence.Store, job string, key record.Key, m *model, offsets record.Offsets) {
	t.Helper()
	if len(m.base) == 0 {
		mustMissing(t, s, job, key)
		return
	}
	checkSnapshot(t, load(t, s, job, key), persistence.Snapshot{Job: job, Key: key, State: m.state(), Offsets: offsets})
}

// testPartsWholeLoad: a whole snapshot with parts loads packed, parts in
// name order; without parts it loads as its base alone.
func testPartsWholeLoad(t *testing.T, s persistence.Store) {
	sn := persistence.Snapshot{Job: "job", Key: "k", State: []byte("base"), Offsets: record.OffsetsOf(map[string]int64{"p/0": 1}),
		Parts: parts("r:2", "two", "r:1", "one", "o:0001", "out")}
	save(t, s, sn)
	got := load(t, s, "job", "k")
	want := stateparts.Pack([]byte("base"), parts("o:0001", "out", "r:1", "one", "r:2", "two"))
	checkSnapshot(t, got, persistence.Snapshot{Job: "job", Key: "k", State: want, Offsets: sn.Offsets})
	base, ps, err := stateparts.Unpack(got.State)
	if err != nil || string(base) != "base" || len(ps) != 3 || ps[0].Name != "o:0001" || string(ps[2].Value) != "two" {
		t.Fatalf("Unpack(Load) = %q, %v, %v", base, ps, err)
	}
	save(t, s, persistence.Snapshot{Job: "job", Key: "plain", State: []byte("whole")})
	checkSnapshot(t, load(t, s, "job", "plain"), persistence.Snapshot{Job: "job", Key: "plain", State: []byte("whole")})
	checkKeys(t, s, "job", "k", "plain")
}

// testPartsDeltaEqualsWhole: a sequence of deltas loads as the whole
// snapshot of the same state written at once to another key does.
func testPartsDeltaEqualsWhole(t *testing.T, s persistence.Store) {
	e := acquire(t, s, "job", "k")
	var m model
	steps := []persistence.Snapshot{
		{State: []byte("b1"), Parts: parts("l", "user", "r:1", "d1", "r:2", "d2")},
		{State: []byte("b2"), Delta: true, Parts: parts("r:3", "d3")},
		{State: []byte("b3"), Delta: true, Parts: parts("r:1", "d1'", "r:2", "")},
		{State: []byte("b4"), Delta: true, Parts: parts("nothing", "")},
		{State: []byte("b5"), Delta: true, Parts: parts("r:4", "x", "r:4", "d4", "l", "")},
	}
	for i, sn := range steps {
		sn.Job, sn.Key, sn.Epoch = "job", "k", e
		sn.Offsets = record.OffsetsOf(map[string]int64{"p/0": int64(i), fmt.Sprintf("p/%d", i): 7})
		save(t, s, sn)
		m.apply(sn)
		checkModel(t, s, "job", "k", &m, sn.Offsets)

		// The same state, written whole to another key.
		var whole []persistence.Part
		for n, v := range m.parts {
			whole = append(whole, persistence.Part{Name: n, Value: v})
		}
		save(t, s, persistence.Snapshot{Job: "job", Key: "whole", State: m.base, Offsets: sn.Offsets, Parts: whole})
		if a, b := load(t, s, "job", "k"), load(t, s, "job", "whole"); string(a.State) != string(b.State) || !slices.Equal(a.Offsets, b.Offsets) {
			t.Fatalf("after step %d the delta-written key loads %q %v, the whole-written one %q %v", i, a.State, a.Offsets, b.State, b.Offsets)
		}
	}
	if len(m.parts) != 3 || string(m.parts["r:1"]) != "d1'" || string(m.parts["r:4"]) != "d4" {
		t.Fatalf("model holds %q, want r:1, r:3 and r:4", m.parts)
	}
}

// testPartsDeltaOntoMissing: a delta onto a key without a snapshot applies
// onto an empty one, and lists the key.
func testPartsDeltaOntoMissing(t *testing.T, s persistence.Store) {
	sn := persistence.Snapshot{Job: "job", Key: "k", State: []byte("b"), Delta: true, Parts: parts("a", "1", "gone", "")}
	save(t, s, sn)
	checkSnapshot(t, load(t, s, "job", "k"), persistence.Snapshot{Job: "job", Key: "k", State: stateparts.Pack([]byte("b"), parts("a", "1"))})
	checkKeys(t, s, "job", "k")
	// A delta that sets nothing loads as its base alone.
	save(t, s, persistence.Snapshot{Job: "job", Key: "bare", State: []byte("b"), Delta: true})
	checkSnapshot(t, load(t, s, "job", "bare"), persistence.Snapshot{Job: "job", Key: "bare", State: []byte("b")})
}

// testPartsWholeReplacesParts: a whole snapshot drops every part it does
// not name, with or without parts of its own.
func testPartsWholeReplacesParts(t *testing.T, s persistence.Store) {
	save(t, s, persistence.Snapshot{Job: "job", Key: "k", State: []byte("b1"), Parts: parts("a", "1", "b", "2")})
	save(t, s, persistence.Snapshot{Job: "job", Key: "k", State: []byte("b2"), Delta: true, Parts: parts("c", "3")})
	save(t, s, persistence.Snapshot{Job: "job", Key: "k", State: []byte("b3"), Parts: parts("b", "2'")})
	checkSnapshot(t, load(t, s, "job", "k"), persistence.Snapshot{Job: "job", Key: "k", State: stateparts.Pack([]byte("b3"), parts("b", "2'"))})
	save(t, s, persistence.Snapshot{Job: "job", Key: "k", State: []byte("plain")})
	checkSnapshot(t, load(t, s, "job", "k"), persistence.Snapshot{Job: "job", Key: "k", State: []byte("plain")})
}

// testPartsDeleteAfterDeltas: an empty State deletes the key, parts and
// all (also from a delta); a later delta or whole write starts from
// nothing.
func testPartsDeleteAfterDeltas(t *testing.T, s persistence.Store) {
	e := acquire(t, s, "job", "k")
	w := func(sn persistence.Snapshot) persistence.Snapshot {
		sn.Job, sn.Key, sn.Epoch = "job", "k", e
		return sn
	}
	save(t, s, w(persistence.Snapshot{State: []byte("b1"), Parts: parts("a", "1"), HasTimer: true, NextTimer: 5}))
	save(t, s, w(persistence.Snapshot{State: []byte("b2"), Delta: true, Parts: parts("b", "2"), HasTimer: true, NextTimer: 5}))
	save(t, s, w(persistence.Snapshot{Delta: true, Parts: parts("c", "3")}))
	mustMissing(t, s, "job", "k")
	checkKeys(t, s, "job")
	checkDue(t, s, "job", 100, 10)
	save(t, s, w(persistence.Snapshot{State: []byte("b3"), Delta: true, Parts: parts("c", "3")}))
	checkSnapshot(t, load(t, s, "job", "k"), persistence.Snapshot{Job: "job", Key: "k", State: stateparts.Pack([]byte("b3"), parts("c", "3"))})
	save(t, s, w(persistence.Snapshot{}))
	save(t, s, w(persistence.Snapshot{State: []byte("b4")}))
	checkSnapshot(t, load(t, s, "job", "k"), persistence.Snapshot{Job: "job", Key: "k", State: []byte("b4")})
	checkEpoch(t, s, "job", "k", e)
}

// testPartsBatchOrder: snapshots of one key in one batch apply in order,
// deltas on top of what came before them in the batch.
func testPartsBatchOrder(t *testing.T, s persistence.Store) {
	batch := []persistence.Snapshot{
		{Job: "job", Key: "k", State: []byte("b1"), Parts: parts("a", "1", "b", "2")},
		{Job: "job", Key: "other", State: []byte("o1"), Delta: true, Parts: parts("x", "1")},
		{Job: "job", Key: "k", State: []byte("b2"), Delta: true, Parts: parts("a", "", "c", "3")},
		{Job: "job", Key: "k", State: []byte("b3"), Delta: true, Parts: parts("b", "2'")},
		{Job: "job", Key: "gone", State: []byte("g"), Parts: parts("x", "1")},
		{Job: "job", Key: "gone"},
		{Job: "job", Key: "gone", State: []byte("g2"), Delta: true, Parts: parts("y", "2")},
	}
	save(t, s, batch...)
	models := map[record.Key]*model{}
	for _, sn := range batch {
		if models[sn.Key] == nil {
			models[sn.Key] = &model{}
		}
		models[sn.Key].apply(sn)
	}
	for k, m := range models {
		checkModel(t, s, "job", k, m, nil)
	}
	if got := string(models["k"].state()); got != string(stateparts.Pack([]byte("b3"), parts("b", "2'", "c", "3"))) {
		t.Fatalf("model of k = %q", got)
	}
}

// testPartsFenced: a delta with a stale epoch is refused and leaves base
// and parts as they were; the holder's delta applies.
func testPartsFenced(t *testing.T, s persistence.Store) {
	e1 := acquire(t, s, "job", "k")
	first := persistence.Snapshot{Job: "job", Key: "k", State: []byte("b1"), Epoch: e1, Parts: parts("a", "1")}
	save(t, s, first)
	e2 := acquire(t, s, "job", "k")
	stale := persistence.Snapshot{Job: "job", Key: "k", State: []byte("stale"), Epoch: e1, Delta: true, Parts: parts("a", "", "b", "2")}
	checkFenced(t, s.Save(ctx(t), []persistence.Snapshot{stale}), persistence.FencedError{Job: "job", Key: "k", Epoch: e1, Holder: e2})
	want := stateparts.Pack([]byte("b1"), parts("a", "1"))
	checkSnapshot(t, load(t, s, "job", "k"), persistence.Snapshot{Job: "job", Key: "k", State: want})
	next := persistence.Snapshot{Job: "job", Key: "k", State: []byte("b2"), Epoch: e2, Delta: true, Parts: parts("b", "2")}
	save(t, s, next)
	checkSnapshot(t, load(t, s, "job", "k"), persistence.Snapshot{Job: "job", Key: "k", State: stateparts.Pack([]byte("b2"), parts("a", "1", "b", "2"))})
}

// testPartsTimers: a delta moves and clears the key's timer like a whole
// snapshot.
func testPartsTimers(t *testing.T, s persistence.Store) {
	save(t, s, persistence.Snapshot{Job: "job", Key: "k", State: []byte("b"), Parts: parts("a", "1"), HasTimer: true, NextTimer: 10})
	checkDue(t, s, "job", 100, 10, persistence.TimerDue{Key: "k", At: 10})
	save(t, s, persistence.Snapshot{Job: "job", Key: "k", State: []byte("b"), Delta: true, Parts: parts("b", "2"), HasTimer: true, NextTimer: 20})
	checkDue(t, s, "job", 100, 10, persistence.TimerDue{Key: "k", At: 20})
	save(t, s, persistence.Snapshot{Job: "job", Key: "k", State: []byte("b"), Delta: true})
	checkDue(t, s, "job", 100, 10)
	checkSnapshot(t, load(t, s, "job", "k"), persistence.Snapshot{Job: "job", Key: "k", State: stateparts.Pack([]byte("b"), parts("a", "1", "b", "2"))})
}

// testPartsMany: a key with many parts, changed one at a time and then
// many at once, loads whole; part names and values may hold any bytes.
func testPartsMany(t *testing.T, s persistence.Store) {
	var m model
	var ps []persistence.Part
	for i := range 1000 {
		ps = append(ps, persistence.Part{Name: fmt.Sprintf("r:%04d\x00{}", i), Value: []byte(fmt.Sprintf("row %d \x00\xff", i))})
	}
	first := persistence.Snapshot{Job: "job", Key: "k", State: []byte("b"), Parts: ps}
	save(t, s, first)
	m.apply(first)
	for i := range 50 {
		sn := persistence.Snapshot{Job: "job", Key: "k", State: []byte(fmt.Sprint("b", i)), Delta: true,
			Parts: []persistence.Part{{Name: fmt.Sprintf("r:%04d\x00{}", i*7), Value: []byte(fmt.Sprint("new ", i))}, {Name: fmt.Sprintf("r:%04d\x00{}", i*7+1)}}}
		save(t, s, sn)
		m.apply(sn)
	}
	// One delta that deletes 600 parts and sets 300 (more than a store
	// may pass to one command).
	big := persistence.Snapshot{Job: "job", Key: "k", State: []byte("big"), Delta: true}
	for i := range 600 {
		big.Parts = append(big.Parts, persistence.Part{Name: fmt.Sprintf("r:%04d\x00{}", 100+i)})
	}
	for i := range 300 {
		big.Parts = append(big.Parts, persistence.Part{Name: fmt.Sprintf("n:%04d", i), Value: []byte(fmt.Sprint("n", i))})
	}
	save(t, s, big)
	m.apply(big)
	checkModel(t, s, "job", "k", &m, nil)
}

// testPartsEmptyName: a part without a name is refused before anything is
// written.
func testPartsEmptyName(t *testing.T, s persistence.Store) {
	err := s.Save(ctx(t), []persistence.Snapshot{
		{Job: "job", Key: "ok", State: []byte("b")},
		{Job: "job", Key: "k", State: []byte("b"), Parts: parts("", "x")},
	})
	if err == nil || errors.Is(err, persistence.ErrFenced) {
		t.Fatalf("Save with an unnamed part = %v, want an error", err)
	}
	mustMissing(t, s, "job", "ok")
}

// testPartsMerge: MergeSnapshots of two snapshots of a key written as one
// loads as the two written in turn do.
func testPartsMerge(t *testing.T, s persistence.Store) {
	type pair struct{ a, b persistence.Snapshot }
	pairs := []pair{
		{persistence.Snapshot{State: []byte("b1"), Parts: parts("a", "1", "b", "2")}, persistence.Snapshot{State: []byte("b2"), Delta: true, Parts: parts("a", "", "c", "3")}},
		{persistence.Snapshot{State: []byte("b1"), Delta: true, Parts: parts("a", "1", "b", "")}, persistence.Snapshot{State: []byte("b2"), Delta: true, Parts: parts("a", "", "c", "3")}},
		{persistence.Snapshot{}, persistence.Snapshot{State: []byte("b2"), Delta: true, Parts: parts("a", "", "c", "3")}},
		{persistence.Snapshot{State: []byte("b1"), Delta: true, Parts: parts("x", "1")}, persistence.Snapshot{}},
		{persistence.Snapshot{State: []byte("b1"), Delta: true, Parts: parts("x", "1")}, persistence.Snapshot{State: []byte("b2"), Parts: parts("y", "2")}},
	}
	for i, p := range pairs {
		prior := persistence.Snapshot{State: []byte("b0"), Parts: parts("a", "0", "b", "0", "x", "0")}
		one, two := record.Key(fmt.Sprint("one", i)), record.Key(fmt.Sprint("two", i))
		for _, k := range []record.Key{one, two} {
			sn := prior
			sn.Job, sn.Key = "job", k
			save(t, s, sn)
		}
		a, b := p.a, p.b
		a.Job, a.Key, b.Job, b.Key = "job", one, "job", one
		save(t, s, a)
		save(t, s, b)
		merged := persistence.MergeSnapshots(a, b)
		merged.Key = two
		save(t, s, merged)
		ga, erra := s.Load(ctx(t), "job", one)
		gb, errb := s.Load(ctx(t), "job", two)
		if string(ga.State) != string(gb.State) || (erra == nil) != (errb == nil) {
			t.Errorf("pair %d: written in turn loads %q (%v), merged %q (%v)", i, ga.State, erra, gb.State, errb)
		}
	}
}

// testPartsSurviveReopen: deltas are as durable as whole snapshots.
func testPartsSurviveReopen(t *testing.T, s persistence.Store, reopen func(persistence.Store) persistence.Store) {
	var m model
	for i, sn := range []persistence.Snapshot{
		{State: []byte("b1"), Parts: parts("a", "1", "b", "2")},
		{State: []byte("b2"), Delta: true, Parts: parts("a", "", "c", "3")},
		{State: []byte("b3"), Delta: true, Parts: parts("b", "2'")},
	} {
		sn.Job, sn.Key, sn.Offsets = "job", "k", record.OffsetsOf(map[string]int64{"p/0": int64(i)})
		save(t, s, sn)
		m.apply(sn)
	}
	s = reopen(s)
	checkModel(t, s, "job", "k", &m, record.OffsetsOf(map[string]int64{"p/0": 2}))
	sn := persistence.Snapshot{Job: "job", Key: "k", State: []byte("b4"), Delta: true, Parts: parts("c", ""), Offsets: record.OffsetsOf(map[string]int64{"p/0": 3})}
	save(t, s, sn)
	m.apply(sn)
	s = reopen(s)
	checkModel(t, s, "job", "k", &m, record.OffsetsOf(map[string]int64{"p/0": 3}))
}

// testLoadMany: persistence.LoadMany (the store's BatchLoader, or a Load
// per key) returns what Load does, in keys' order, an empty State for a
// key without a snapshot.
func testLoadMany(t *testing.T, s persistence.Store) {
	save(t, s,
		persistence.Snapshot{Job: "job", Key: "a", State: []byte("b"), Parts: parts("r:1", "x"), Offsets: record.OffsetsOf(map[string]int64{"p/0": 1})},
		persistence.Snapshot{Job: "job", Key: "b", State: []byte("whole")},
		persistence.Snapshot{Job: "other", Key: "c", State: []byte("c")})
	keys := []record.Key{"b", "missing", "a", "c"}
	got, err := persistence.LoadMany(ctx(t), s, "job", keys)
	if err != nil || len(got) != len(keys) {
		t.Fatalf("LoadMany = %d snapshots, %v", len(got), err)
	}
	for i, k := range keys {
		if got[i].Job != "job" || got[i].Key != k {
			t.Fatalf("LoadMany[%d] is %q/%q, want job/%q", i, got[i].Job, got[i].Key, k)
		}
		if k == "missing" || k == "c" {
			if len(got[i].State) != 0 {
				t.Fatalf("LoadMany[%d] (%q, no snapshot in job) = %q", i, k, got[i].State)
			}
			continue
		}
		checkSnapshot(t, got[i], load(t, s, "job", k))
	}
}

// testAcquireLoadMany: persistence.AcquireLoadMany (the store's Activator,
// or Acquire and Load per key) issues each key a new owner epoch, which
// fences the earlier one, and returns the snapshots as Load does.
func testAcquireLoadMany(t *testing.T, s persistence.Store) {
	e1 := acquire(t, s, "job", "a")
	save(t, s, persistence.Snapshot{Job: "job", Key: "a", State: []byte("b"), Parts: parts("r:1", "x"), Epoch: e1})
	save(t, s, persistence.Snapshot{Job: "job", Key: "b", State: []byte("whole")})
	keys := []record.Key{"a", "b", "missing"}
	epochs, got, err := persistence.AcquireLoadMany(ctx(t), s, "job", keys)
	if err != nil || len(epochs) != 3 || len(got) != 3 {
		t.Fatalf("AcquireLoadMany = %v, %d snapshots, %v", epochs, len(got), err)
	}
	if epochs[0] <= e1 || epochs[1] < 1 || epochs[2] < 1 {
		t.Fatalf("AcquireLoadMany epochs %v, want a's above %d", epochs, e1)
	}
	for i, k := range keys {
		checkEpoch(t, s, "job", k, epochs[i])
	}
	checkSnapshot(t, got[0], persistence.Snapshot{Job: "job", Key: "a", State: stateparts.Pack([]byte("b"), parts("r:1", "x"))})
	checkSnapshot(t, got[1], persistence.Snapshot{Job: "job", Key: "b", State: []byte("whole")})
	if got[2].Key != "missing" || len(got[2].State) != 0 {
		t.Fatalf("AcquireLoadMany of a missing key = %+v", got[2])
	}
	checkFenced(t, s.Save(ctx(t), []persistence.Snapshot{{Job: "job", Key: "a", State: []byte("stale"), Epoch: e1}}),
		persistence.FencedError{Job: "job", Key: "a", Epoch: e1, Holder: epochs[0]})
	save(t, s, persistence.Snapshot{Job: "job", Key: "a", State: []byte("b2"), Delta: true, Epoch: epochs[0]})
	if e := acquire(t, s, "job", "b"); e <= epochs[1] {
		t.Fatalf("Acquire after AcquireLoadMany = %d, want above %d", e, epochs[1])
	}
}
