package storetest

import (
	"errors"
	"maps"
	"testing"

	"github.com/joinery/joinery/persistence"
)

func lineageStore(t *testing.T, s persistence.Store) persistence.LineageStore {
	t.Helper()
	ls, ok := s.(persistence.LineageStore)
	if !ok {
		t.Fatalf("%T does not implement persistence.LineageStore", s)
	}
	return ls
}

func lineage(t *testing.T, s persistence.LineageStore, job string) persistence.Lineage {
	t.Helper()
	l, err := s.Lineage(ctx(t), job)
	if err != nil {
		t.Fatalf("Lineage(%q): %v", job, err)
	}
	return l
}

func commitSeen(t *testing.T, s persistence.LineageStore, job string, offsets map[string]int64, seen persistence.Lineage) persistence.Lineage {
	t.Helper()
	l, err := s.CommitOffsetsSeen(ctx(t), job, offsets, seen)
	if err != nil {
		t.Fatalf("CommitOffsetsSeen(%q, %v, %+v): %v", job, offsets, seen, err)
	}
	return l
}

func checkOffsets(t *testing.T, s persistence.Store, job string, want map[string]int64) {
	t.Helper()
	got, err := s.CommittedOffsets(ctx(t), job)
	if err != nil {
		t.Fatalf("CommittedOffsets(%q): %v", job, err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("CommittedOffsets(%q) = %v, want %v", job, got, want)
	}
}

// checkRollback fails unless err is a *RollbackError for job with seen and
// found.
func checkRollback(t *testing.T, err error, job string, seen, found persistence.Lineage) {
	t.Helper()
	var re *persistence.RollbackError
	if !errors.As(err, &re) || !errors.Is(err, persistence.ErrRollback) {
		t.Fatalf("error = %v, want a *persistence.RollbackError", err)
	}
	if want := (persistence.RollbackError{Job: job, Seen: seen, Found: found}); *re != want {
		t.Fatalf("RollbackError = %+v, want %+v", *re, want)
	}
}

// testLineageStable: a job's incarnation is created once and stays; every
// commit, an empty one too, bumps the sequence by one; jobs are separate.
func testLineageStable(t *testing.T, s persistence.Store) {
	ls := lineageStore(t, s)
	l := lineage(t, ls, "job")
	if l.Incarnation == "" || l.Floor <= 0 || l.Seq != 0 {
		t.Fatalf("first Lineage = %+v, want an incarnation, a positive floor and seq 0", l)
	}
	if again := lineage(t, ls, "job"); again != l {
		t.Fatalf("second Lineage = %+v, want %+v", again, l)
	}
	for i, offsets := range []map[string]int64{{"p/0": 3}, {}, {"p/0": 1, "p/1": 7}} {
		if err := s.CommitOffsets(ctx(t), "job", offsets); err != nil {
			t.Fatal(err)
		}
		want := l
		want.Seq = int64(i + 1)
		if got := lineage(t, ls, "job"); got != want {
			t.Fatalf("Lineage after commit %d = %+v, want %+v", i+1, got, want)
		}
	}
	checkOffsets(t, s, "job", map[string]int64{"p/0": 3, "p/1": 7})
	if o := lineage(t, ls, "other"); o.Incarnation == l.Incarnation || o.Seq != 0 {
		t.Fatalf("Lineage of another job = %+v, want its own incarnation at seq 0 (job has %+v)", o, l)
	}
}

// testLineageCommitSeen: a commit checked against the current lineage, or
// an older one of the same incarnation (another node committed since),
// passes and returns the bumped lineage.
func testLineageCommitSeen(t *testing.T, s persistence.Store) {
	ls := lineageStore(t, s)
	l := lineage(t, ls, "job")
	l1 := commitSeen(t, ls, "job", map[string]int64{"p/0": 5}, l)
	if want := (persistence.Lineage{Incarnation: l.Incarnation, Floor: l.Floor, Seq: l.Seq + 1}); l1 != want {
		t.Fatalf("CommitOffsetsSeen = %+v, want %+v", l1, want)
	}
	l2 := commitSeen(t, ls, "job", map[string]int64{"p/0": 9}, l) // seen is older: fine
	if l2.Seq != l.Seq+2 || l2.Incarnation != l.Incarnation {
		t.Fatalf("CommitOffsetsSeen with an older seen = %+v, want seq %d", l2, l.Seq+2)
	}
	commitSeen(t, ls, "job", map[string]int64{"p/0": 2}, persistence.Lineage{}) // zero: no check
	checkOffsets(t, s, "job", map[string]int64{"p/0": 9})
}

// testLineageRollbackRefused: a commit whose seen lineage is ahead of the
// store (a higher seq, another incarnation) is refused with a
// *RollbackError and writes nothing.
func testLineageRollbackRefused(t *testing.T, s persistence.Store) {
	ls := lineageStore(t, s)
	commitSeen(t, ls, "job", map[string]int64{"p/0": 4}, persistence.Lineage{})
	cur := commitSeen(t, ls, "job", map[string]int64{"p/0": 5}, persistence.Lineage{})
	for _, seen := range []persistence.Lineage{
		{Incarnation: cur.Incarnation, Floor: cur.Floor, Seq: cur.Seq + 3},              // the store lost commits
		{Incarnation: "an-earlier-incarnation", Floor: cur.Floor, Seq: cur.Seq},         // the store was replaced
		{Incarnation: "an-earlier-incarnation", Floor: cur.Floor - 1, Seq: cur.Seq - 1}, // also with a lower seq
	} {
		_, err := ls.CommitOffsetsSeen(ctx(t), "job", map[string]int64{"p/0": 99, "p/1": 1}, seen)
		checkRollback(t, err, "job", seen, cur)
		checkOffsets(t, s, "job", map[string]int64{"p/0": 5})
		if got := lineage(t, ls, "job"); got != cur {
			t.Fatalf("Lineage after a refused commit = %+v, want %+v (unchanged)", got, cur)
		}
	}
}

// testLineageRefound: Refound replaces the incarnation by one whose floor
// lies above every epoch issued before, keeps the sequence, and is a
// compare-and-set; epochs from before can no longer write.
func testLineageRefound(t *testing.T, s persistence.Store) {
	ls := lineageStore(t, s)
	zombie := acquire(t, s, "job", "k")
	save(t, s, fencedSnap("job", "k", "before", zombie))
	cur := commitSeen(t, ls, "job", map[string]int64{"p/0": 1}, persistence.Lineage{})
	n, err := ls.Refound(ctx(t), "job", cur)
	if err != nil {
		t.Fatal(err)
	}
	if n.Incarnation == cur.Incarnation || n.Floor <= cur.Floor || n.Floor <= zombie || n.Seq != cur.Seq {
		t.Fatalf("Refound(%+v) = %+v, want a new incarnation, a floor above %d and %d, seq %d", cur, n, cur.Floor, zombie, cur.Seq)
	}
	if got := lineage(t, ls, "job"); got != n {
		t.Fatalf("Lineage after Refound = %+v, want %+v", got, n)
	}
	if again, err := ls.Refound(ctx(t), "job", cur); err != nil || again != n {
		t.Fatalf("Refound with a stale found = %+v, %v; want %+v unchanged", again, err, n)
	}
	e := acquire(t, s, "job", "k")
	if e != n.Floor+1 {
		t.Fatalf("Acquire after Refound = %d, want the new floor + 1 = %d", e, n.Floor+1)
	}
	checkFenced(t, s.Save(ctx(t), []persistence.Snapshot{fencedSnap("job", "k", "zombie", zombie)}),
		persistence.FencedError{Job: "job", Key: "k", Epoch: zombie, Holder: e})
	if got := acquire(t, s, "job", "fresh"); got != n.Floor+1 {
		t.Fatalf("first Acquire of another key after Refound = %d, want %d", got, n.Floor+1)
	}
}

// testLineageGuard: a Guard passes commits through while the store keeps
// its lineage and, once the store shows another incarnation, refuses with
// a *RollbackError (reported once, then sticky) and commits nothing.
func testLineageGuard(t *testing.T, s persistence.Store) {
	ls := lineageStore(t, s)
	var reported []*persistence.RollbackError
	g := persistence.NewGuard(s, func(re *persistence.RollbackError) { reported = append(reported, re) })
	if g == nil {
		t.Fatal("NewGuard returned nil for a LineageStore")
	}
	if err := g.Check(ctx(t), "job"); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if err := g.CommitOffsets(ctx(t), "job", map[string]int64{"p/0": 1}); err != nil {
		t.Fatalf("CommitOffsets: %v", err)
	}
	seen := g.Seen("job")
	if want := lineage(t, ls, "job"); seen != want || seen.Seq != 1 {
		t.Fatalf("Seen = %+v, want %+v at seq 1", seen, want)
	}
	// Another node commits: the guard's view is older, which is fine.
	commitSeen(t, ls, "job", map[string]int64{"p/1": 1}, persistence.Lineage{})
	if err := g.CommitOffsets(ctx(t), "job", map[string]int64{"p/0": 2}); err != nil {
		t.Fatalf("CommitOffsets after another node's: %v", err)
	}
	seen = g.Seen("job")
	// The store is replaced (as a restart from an empty disk would).
	found, err := ls.Refound(ctx(t), "job", seen)
	if err != nil {
		t.Fatal(err)
	}
	err = g.CommitOffsets(ctx(t), "job", map[string]int64{"p/0": 50})
	checkRollback(t, err, "job", seen, found)
	checkOffsets(t, s, "job", map[string]int64{"p/0": 2, "p/1": 1})
	checkRollback(t, g.Check(ctx(t), "job"), "job", seen, found)
	checkRollback(t, g.CommitOffsets(ctx(t), "job", nil), "job", seen, found)
	if len(reported) != 1 || *reported[0] != (persistence.RollbackError{Job: "job", Seen: seen, Found: found}) {
		t.Fatalf("OnRollback calls = %v, want one for %+v -> %+v", reported, seen, found)
	}
	// The floor moved already: the guard did not re-found again.
	if got := lineage(t, ls, "job"); got != found {
		t.Fatalf("Lineage after detection = %+v, want %+v", got, found)
	}
	// Other jobs are unaffected.
	if err := g.CommitOffsets(ctx(t), "other", map[string]int64{"p/0": 1}); err != nil {
		t.Fatalf("CommitOffsets of another job: %v", err)
	}
}

// testLineageGuardRecover: Recover compares a lineage a source's commit
// carried with the store's. Not behind: nil. Behind with the same floor (a
// snapshot restored): the store is re-founded and the guard takes the new
// lineage, so its commits go on. Another incarnation with a higher floor (a
// store restarted empty): reported, nothing re-founded. Neither stops the
// job; after a rollback Check found, Recover returns that error.
func testLineageGuardRecover(t *testing.T, s persistence.Store) {
	ls := lineageStore(t, s)
	var reported []*persistence.RollbackError
	g := persistence.NewGuard(s, func(re *persistence.RollbackError) { reported = append(reported, re) })
	if err := g.CommitOffsets(ctx(t), "job", map[string]int64{"p/0": 1}); err != nil {
		t.Fatalf("CommitOffsets: %v", err)
	}
	cur := g.Seen("job")
	older := cur
	older.Seq--
	for _, seen := range []persistence.Lineage{{}, cur, older} {
		if re, err := g.Recover(ctx(t), "job", seen); re != nil || err != nil {
			t.Fatalf("Recover(%+v) on a store at %+v = %v, %v; want nil", seen, cur, re, err)
		}
	}
	// A source acknowledged records under seq+5: the store went back.
	ahead := cur
	ahead.Seq += 5
	re, err := g.Recover(ctx(t), "job", ahead)
	if err != nil || re == nil || *re != (persistence.RollbackError{Job: "job", Seen: ahead, Found: cur}) {
		t.Fatalf("Recover(%+v) on a store at %+v = %v, %v; want the rollback", ahead, cur, re, err)
	}
	now := lineage(t, ls, "job")
	if now.Incarnation == cur.Incarnation || now.Floor <= cur.Floor || now.Seq != cur.Seq {
		t.Fatalf("lineage after Recover = %+v, want %+v re-founded", now, cur)
	}
	if got := g.Seen("job"); got != now {
		t.Fatalf("Seen after Recover = %+v, want %+v", got, now)
	}
	if err := g.CommitOffsets(ctx(t), "job", map[string]int64{"p/0": 2}); err != nil {
		t.Fatalf("CommitOffsets after Recover: %v", err)
	}
	if err := g.Check(ctx(t), "job"); err != nil {
		t.Fatalf("Check after Recover: %v", err)
	}
	now = g.Seen("job")
	// A commit of an incarnation the store no longer has, with a lower
	// floor: reported, the store kept.
	gone := persistence.Lineage{Incarnation: "gone", Floor: 1, Seq: 100}
	re, err = g.Recover(ctx(t), "job", gone)
	if err != nil || re == nil || *re != (persistence.RollbackError{Job: "job", Seen: gone, Found: now}) {
		t.Fatalf("Recover(%+v) = %v, %v; want the rollback", gone, re, err)
	}
	if got := lineage(t, ls, "job"); got != now {
		t.Fatalf("lineage after Recover of an older incarnation = %+v, want %+v kept", got, now)
	}
	if len(reported) != 0 {
		t.Fatalf("Recover reported %v through OnRollback, want nothing (the job goes on)", reported)
	}
	checkOffsets(t, s, "job", map[string]int64{"p/0": 2})
	// Once Check found a rollback, Recover says so.
	found, err := ls.Refound(ctx(t), "job", now)
	if err != nil {
		t.Fatal(err)
	}
	checkRollback(t, g.Check(ctx(t), "job"), "job", now, found)
	_, err = g.Recover(ctx(t), "job", persistence.Lineage{})
	checkRollback(t, err, "job", now, found)
}

func testLineageSurvivesReopen(t *testing.T, s persistence.Store, reopen func(persistence.Store) persistence.Store) {
	ls := lineageStore(t, s)
	commitSeen(t, ls, "job", map[string]int64{"p/0": 1}, persistence.Lineage{})
	l := commitSeen(t, ls, "job", map[string]int64{"p/0": 2}, persistence.Lineage{})
	e := acquire(t, s, "job", "k")
	s = reopen(s)
	ls = lineageStore(t, s)
	if got := lineage(t, ls, "job"); got != l {
		t.Fatalf("Lineage after reopen = %+v, want %+v", got, l)
	}
	checkOffsets(t, s, "job", map[string]int64{"p/0": 2})
	if got := commitSeen(t, ls, "job", nil, l); got.Seq != l.Seq+1 {
		t.Fatalf("commit after reopen: seq %d, want %d", got.Seq, l.Seq+1)
	}
	if got := acquire(t, s, "job", "k"); got != e+1 {
		t.Fatalf("Acquire after reopen = %d, want %d", got, e+1)
	}
}
