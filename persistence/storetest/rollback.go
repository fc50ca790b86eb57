package storetest

import (
	"errors"
	"maps"
	"testing"

	"github.com/joinery/joinery/internal/stateparts"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// WithRollback gives the suite a way to send a store back in time, as a
// Redis restored from an older snapshot (or failed over to a lagging
// replica) goes: mark takes a point-in-time copy of the data under s and
// returns restore, which puts the data back to that copy, for real (a
// server restarted from its older dump, say), leaving s open: the same
// handle is used after, as a running node would. Without it the Rollback*
// subtests are skipped. A store that cannot go back in time under an open
// handle (embedded: one process owns its data) runs without it.
func WithRollback(mark func(t *testing.T, s persistence.Store) (restore func())) Option {
	return func(su *suite) { su.rollback = mark }
}

var rollbackCases = []struct {
	name string
	fn   func(t *testing.T, s persistence.Store, mark func() (restore func()), reopen func(persistence.Store) persistence.Store)
}{
	{"RollbackFirstWriteRefused", testRollbackFirstWriteRefused},
	{"RollbackDeltaRefused", testRollbackDeltaRefused},
}

// testRollbackDeltaRefused: a delta is refused after a rollback as a whole
// write is: it would otherwise apply onto parts that lack writes it builds
// on. Nothing of it is written.
func testRollbackDeltaRefused(t *testing.T, s persistence.Store, mark func() func(), reopen func(persistence.Store) persistence.Store) {
	e := acquire(t, s, "job", "k")
	before := persistence.Snapshot{Job: "job", Key: "k", State: []byte("b1"), Parts: parts("a", "1"), Epoch: e}
	save(t, s, before)
	restore := mark()
	save(t, s, persistence.Snapshot{Job: "job", Key: "k", State: []byte("lost"), Delta: true, Parts: parts("b", "2"), Epoch: e})
	restore()
	next := persistence.Snapshot{Job: "job", Key: "k", State: []byte("b3"), Delta: true, Parts: parts("c", "3"), Epoch: e}
	if err := s.Save(ctx(t), []persistence.Snapshot{next}); !errors.Is(err, persistence.ErrStoreRolledBack) {
		t.Fatalf("delta after the rollback = %v, want ErrStoreRolledBack", err)
	}
	if _, err := s.Load(ctx(t), "job", "k"); !errors.Is(err, persistence.ErrStoreRolledBack) {
		t.Fatalf("Load after the rollback = %v, want ErrStoreRolledBack", err)
	}
	// Batched loads check the generation too.
	if _, err := persistence.LoadMany(ctx(t), s, "job", []record.Key{"k", "x"}); !errors.Is(err, persistence.ErrStoreRolledBack) {
		t.Fatalf("LoadMany after the rollback = %v, want ErrStoreRolledBack", err)
	}
	if _, _, err := persistence.AcquireLoadMany(ctx(t), s, "job", []record.Key{"k"}); !errors.Is(err, persistence.ErrStoreRolledBack) {
		t.Fatalf("AcquireLoadMany after the rollback = %v, want ErrStoreRolledBack", err)
	}
	if reopen == nil {
		return
	}
	fresh := reopen(s)
	checkSnapshot(t, load(t, fresh, "job", "k"), persistence.Snapshot{Job: "job", Key: "k", State: stateparts.Pack([]byte("b1"), parts("a", "1"))})
}

// testRollbackFirstWriteRefused: a store that went back in time under an
// open handle refuses that handle's first write to a key whose shard lost
// writes it acknowledged, with an error matching ErrStoreRolledBack (and
// ErrRollback), and writes nothing; a Load of the key is refused too (a
// fresh activation must not load the rolled-back state and build on it).
// Through a Guard the refusal is a rollback found: OnRollback once, and the
// next commit fails with the *RollbackError. A new handle (a restarted
// node) reads the store as it went back to, and writes.
func testRollbackFirstWriteRefused(t *testing.T, s persistence.Store, mark func() func(), reopen func(persistence.Store) persistence.Store) {
	e := acquire(t, s, "job", "k")
	before := persistence.Snapshot{Job: "job", Key: "k", State: []byte("before"), Offsets: record.OffsetsOf(map[string]int64{"p/0": 1}), Epoch: e}
	save(t, s, before)
	commit(t, s, "job", map[string]int64{"p/0": 1})
	restore := mark()
	// Acknowledged, then lost by the rollback.
	save(t, s, persistence.Snapshot{Job: "job", Key: "k", State: []byte("lost"), Offsets: record.OffsetsOf(map[string]int64{"p/0": 2}), Epoch: e})
	commit(t, s, "job", map[string]int64{"p/0": 2})
	restore()

	next := persistence.Snapshot{Job: "job", Key: "k", State: []byte("after"), Offsets: record.OffsetsOf(map[string]int64{"p/0": 3}), Epoch: e}
	err := s.Save(ctx(t), []persistence.Snapshot{next})
	var se *persistence.StaleStoreError
	if !errors.Is(err, persistence.ErrStoreRolledBack) || !errors.Is(err, persistence.ErrRollback) || !errors.As(err, &se) {
		t.Fatalf("first Save after the rollback = %v, want a *persistence.StaleStoreError (ErrStoreRolledBack)", err)
	}
	if se.Job != "job" || se.Found >= se.Seen {
		t.Fatalf("StaleStoreError = %+v, want job %q with Found below Seen", *se, "job")
	}
	if len(persistence.Fenced(err)) != 0 {
		t.Fatalf("first Save after the rollback = %v: fenced, want refused as rolled back", err)
	}
	if _, err := s.Load(ctx(t), "job", "k"); !errors.Is(err, persistence.ErrStoreRolledBack) {
		t.Fatalf("Load after the rollback = %v, want ErrStoreRolledBack", err)
	}
	if err := s.Save(ctx(t), []persistence.Snapshot{next}); !errors.Is(err, persistence.ErrStoreRolledBack) {
		t.Fatalf("second Save after the rollback = %v, want ErrStoreRolledBack (refused for good)", err)
	}

	if ls, ok := s.(persistence.LineageStore); ok {
		var found []*persistence.RollbackError
		g := persistence.NewGuard(ls, func(re *persistence.RollbackError) { found = append(found, re) })
		err := g.Save(ctx(t), []persistence.Snapshot{next})
		if !errors.Is(err, persistence.ErrStoreRolledBack) {
			t.Fatalf("Save through a Guard after the rollback = %v, want ErrStoreRolledBack", err)
		}
		if len(found) != 1 || found[0].Write == nil || found[0].Job != "job" {
			t.Fatalf("Guard's OnRollback got %+v, want one RollbackError naming the refused write", found)
		}
		var re *persistence.RollbackError
		if err := g.CommitOffsets(ctx(t), "job", map[string]int64{"p/0": 3}); !errors.As(err, &re) || re != found[0] {
			t.Fatalf("Guard's commit after the refused write = %v, want the RollbackError %v", err, found[0])
		}
	}

	if reopen == nil {
		return
	}
	fresh := reopen(s) // a restarted node: it remembers nothing
	checkSnapshot(t, load(t, fresh, "job", "k"), persistence.Snapshot{Job: "job", Key: "k", State: []byte("before"), Offsets: record.OffsetsOf(map[string]int64{"p/0": 1})})
	if got := committed(t, fresh, "job"); !maps.Equal(got, map[string]int64{"p/0": 1}) {
		t.Fatalf("CommittedOffsets after the rollback = %v, want the copy's {p/0: 1}", got)
	}
	e2 := acquire(t, fresh, "job", "k")
	next.Epoch = e2
	save(t, fresh, next)
	checkSnapshot(t, load(t, fresh, "job", "k"), persistence.Snapshot{Job: "job", Key: "k", State: []byte("after"), Offsets: record.OffsetsOf(map[string]int64{"p/0": 3})})
}
