package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

func acquire(t *testing.T, s persistence.Store, job string, key record.Key) int64 {
	t.Helper()
	e, err := s.Acquire(ctx(t), job, key)
	if err != nil {
		t.Fatalf("Acquire(%q, %q): %v", job, key, err)
	}
	return e
}

func checkEpoch(t *testing.T, s persistence.Store, job string, key record.Key, want int64) {
	t.Helper()
	got, err := s.Epoch(ctx(t), job, key)
	if err != nil {
		t.Fatalf("Epoch(%q, %q): %v", job, key, err)
	}
	if got != want {
		t.Fatalf("Epoch(%q, %q) = %d, want %d", job, key, got, want)
	}
}

func fencedSnap(job string, key record.Key, state string, epoch int64) persistence.Snapshot {
	return persistence.Snapshot{Job: job, Key: key, State: []byte(state), Offsets: record.OffsetsOf(map[string]int64{"p/0": epoch}), Epoch: epoch}
}

// checkFenced fails unless err is exactly the refusals want, in order.
func checkFenced(t *testing.T, err error, want ...persistence.FencedError) {
	t.Helper()
	if err == nil {
		t.Fatalf("Save = nil, want %d fenced snapshots", len(want))
	}
	if !errors.Is(err, persistence.ErrFenced) {
		t.Fatalf("Save = %v, want errors.Is(err, ErrFenced)", err)
	}
	var first *persistence.FencedError
	if !errors.As(err, &first) || *first != want[0] {
		t.Fatalf("errors.As(Save error) = %+v, want %+v", first, want[0])
	}
	got := persistence.Fenced(err)
	if len(got) != len(want) {
		t.Fatalf("Fenced(%v) has %d errors, want %d", err, len(got), len(want))
	}
	for i := range want {
		if *got[i] != want[i] {
			t.Errorf("Fenced(err)[%d] = %+v, want %+v", i, *got[i], want[i])
		}
	}
}

// floor returns the epoch floor of job's incarnation (0 for a store
// without a lineage): Acquire returns floor+1 first, then consecutive values.
func floor(t *testing.T, s persistence.Store, job string) int64 {
	t.Helper()
	ls, ok := s.(persistence.LineageStore)
	if !ok {
		return 0
	}
	l, err := ls.Lineage(ctx(t), job)
	if err != nil {
		t.Fatalf("Lineage(%q): %v", job, err)
	}
	return l.Floor
}

func testAcquireGrows(t *testing.T, s persistence.Store) {
	checkEpoch(t, s, "job", "a", 0)
	f := floor(t, s, "job")
	for want := f + 1; want <= f+3; want++ {
		if got := acquire(t, s, "job", "a"); got != want {
			t.Fatalf("Acquire #%d of job/a = %d, want %d", want-f, got, want)
		}
		checkEpoch(t, s, "job", "a", want)
	}
	// Independent per key and per job, including odd names.
	for _, jk := range []struct {
		job string
		key record.Key
	}{{"job", "b"}, {"other", "a"}, {"jo", "ba"}, {"", ""}, {"{job}", "{a}"}, {"job:epoch", "a"}} {
		if got := acquire(t, s, jk.job, jk.key); got != floor(t, s, jk.job)+1 {
			t.Errorf("first Acquire(%q, %q) = %d, want floor+1 = %d", jk.job, jk.key, got, floor(t, s, jk.job)+1)
		}
	}
	checkEpoch(t, s, "job", "a", f+3)
	checkEpoch(t, s, "job", "c", 0)
	checkEpoch(t, s, "other", "b", 0)
	// Acquire creates no snapshot, and deleting a snapshot keeps the epoch.
	mustMissing(t, s, "job", "a")
	checkKeys(t, s, "job")
	save(t, s, fencedSnap("job", "a", "v", f+3))
	save(t, s, persistence.Snapshot{Job: "job", Key: "a", Epoch: f + 3})
	mustMissing(t, s, "job", "a")
	checkEpoch(t, s, "job", "a", f+3)
	if got := acquire(t, s, "job", "a"); got != f+4 {
		t.Fatalf("Acquire after a delete = %d, want %d", got, f+4)
	}
}

func testAcquireConcurrent(t *testing.T, s persistence.Store) {
	const workers, rounds = 8, 5
	c := ctx(t)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[int64]int{}
	)
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for range rounds {
				e, err := s.Acquire(c, "job", "hot")
				if err != nil {
					errs <- fmt.Errorf("worker %d: Acquire: %w", w, err)
					return
				}
				mu.Lock()
				seen[e]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	f := floor(t, s, "job")
	for e := f + 1; e <= f+workers*rounds; e++ {
		if seen[e] != 1 {
			t.Errorf("epoch %d returned %d times, want once", e, seen[e])
		}
	}
	if len(seen) != workers*rounds {
		t.Errorf("Acquire returned %d distinct epochs, want %d: %v", len(seen), workers*rounds, seen)
	}
	checkEpoch(t, s, "job", "hot", f+workers*rounds)
}

func testSaveFenced(t *testing.T, s persistence.Store) {
	e1 := acquire(t, s, "job", "k")
	first := fencedSnap("job", "k", "written at e1", e1)
	save(t, s, first)
	checkSnapshot(t, load(t, s, "job", "k"), first)

	e2 := acquire(t, s, "job", "k") // a new activation
	c := ctx(t)
	checkFenced(t, s.Save(c, []persistence.Snapshot{fencedSnap("job", "k", "stale write", e1)}),
		persistence.FencedError{Job: "job", Key: "k", Epoch: e1, Holder: e2})
	checkSnapshot(t, load(t, s, "job", "k"), first)
	// A stale delete is refused too.
	checkFenced(t, s.Save(c, []persistence.Snapshot{{Job: "job", Key: "k", Epoch: e1}}),
		persistence.FencedError{Job: "job", Key: "k", Epoch: e1, Holder: e2})
	checkSnapshot(t, load(t, s, "job", "k"), first)
	// So is an epoch never issued.
	checkFenced(t, s.Save(c, []persistence.Snapshot{fencedSnap("job", "k", "future", e2+1)}),
		persistence.FencedError{Job: "job", Key: "k", Epoch: e2 + 1, Holder: e2})
	checkSnapshot(t, load(t, s, "job", "k"), first)
	checkEpoch(t, s, "job", "k", e2)

	// The holder writes.
	second := fencedSnap("job", "k", "written at e2", e2)
	save(t, s, second)
	checkSnapshot(t, load(t, s, "job", "k"), second)
	checkKeys(t, s, "job", "k")
}

func testSaveFencedEpochZero(t *testing.T, s persistence.Store) {
	// Unfenced writes work while the key was never acquired...
	legacy := snap("job", "k", "legacy", map[string]int64{"p/0": 1})
	save(t, s, legacy)
	checkSnapshot(t, load(t, s, "job", "k"), legacy)
	// ...and are refused once it was: epoch 0 is just the epoch before the first.
	e := acquire(t, s, "job", "k")
	checkFenced(t, s.Save(ctx(t), []persistence.Snapshot{snap("job", "k", "late legacy", nil)}),
		persistence.FencedError{Job: "job", Key: "k", Epoch: 0, Holder: e})
	checkSnapshot(t, load(t, s, "job", "k"), legacy)
	// Acquiring one key does not fence another.
	save(t, s, snap("job", "other", "x", nil))
	checkKeys(t, s, "job", "k", "other")
}

func testSaveFencedMixedBatch(t *testing.T, s persistence.Store) {
	epochs := map[record.Key]int64{}
	for _, k := range []record.Key{"a", "b", "c", "d", "e"} {
		epochs[k] = acquire(t, s, "job", k)
		save(t, s, fencedSnap("job", k, "old "+string(k), epochs[k]))
	}
	eb := acquire(t, s, "job", "b")
	ed := acquire(t, s, "job", "d")
	eo := acquire(t, s, "other", "a") // another job's key of the same name
	batch := []persistence.Snapshot{
		fencedSnap("job", "a", "new a", epochs["a"]),
		fencedSnap("job", "b", "stale b", epochs["b"]),
		{Job: "job", Key: "c", Epoch: epochs["c"]}, // a fresh delete
		{Job: "job", Key: "d", Epoch: epochs["d"]}, // a stale delete
		fencedSnap("job", "e", "new e", epochs["e"]),
		fencedSnap("job", "never", "unfenced", 0),
		fencedSnap("other", "a", "stale other", 0),
		fencedSnap("job", "b", "stale b again", epochs["b"]),
	}
	checkFenced(t, s.Save(ctx(t), batch),
		persistence.FencedError{Job: "job", Key: "b", Epoch: epochs["b"], Holder: eb},
		persistence.FencedError{Job: "job", Key: "d", Epoch: epochs["d"], Holder: ed},
		persistence.FencedError{Job: "other", Key: "a", Epoch: 0, Holder: eo},
		persistence.FencedError{Job: "job", Key: "b", Epoch: epochs["b"], Holder: eb},
	)
	checkSnapshot(t, load(t, s, "job", "a"), batch[0])
	checkSnapshot(t, load(t, s, "job", "b"), fencedSnap("job", "b", "old b", epochs["b"]))
	mustMissing(t, s, "job", "c")
	checkSnapshot(t, load(t, s, "job", "d"), fencedSnap("job", "d", "old d", epochs["d"]))
	checkSnapshot(t, load(t, s, "job", "e"), batch[4])
	checkSnapshot(t, load(t, s, "job", "never"), batch[5])
	mustMissing(t, s, "other", "a")
	checkKeys(t, s, "job", "a", "b", "d", "e", "never")
	checkKeys(t, s, "other")

	// A batch refused as a whole writes nothing and still reports each.
	checkFenced(t, s.Save(ctx(t), []persistence.Snapshot{batch[1], batch[3]}),
		persistence.FencedError{Job: "job", Key: "b", Epoch: epochs["b"], Holder: eb},
		persistence.FencedError{Job: "job", Key: "d", Epoch: epochs["d"], Holder: ed},
	)
	checkSnapshot(t, load(t, s, "job", "d"), fencedSnap("job", "d", "old d", epochs["d"]))
}

// testSaveFencedRace runs an old owner's writes against a new owner's
// Acquire: once Acquire has returned, no write of the old epoch lands, so the
// new owner's first write is the last word.
func testSaveFencedRace(t *testing.T, s persistence.Store) {
	c := ctx(t)
	old := acquire(t, s, "job", "k")
	save(t, s, fencedSnap("job", "k", "old 0", old))
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 1; ; i++ {
			err := s.Save(c, []persistence.Snapshot{fencedSnap("job", "k", fmt.Sprintf("old %d", i), old)})
			if i == 1 {
				close(started)
			}
			if err != nil {
				if len(persistence.Fenced(err)) == 1 {
					err = nil
				}
				done <- err
				return
			}
		}
	}()
	<-started
	e := acquire(t, s, "job", "k")
	want := fencedSnap("job", "k", "new owner", e)
	save(t, s, want)
	if err := <-done; err != nil {
		t.Fatalf("old owner's Save: %v", err)
	}
	checkSnapshot(t, load(t, s, "job", "k"), want)
}

func testEpochSurvivesReopen(t *testing.T, s persistence.Store, reopen func(persistence.Store) persistence.Store) {
	acquire(t, s, "job", "a")
	ea := acquire(t, s, "job", "a")
	eb := acquire(t, s, "job", "b")
	want := fencedSnap("job", "a", "state", ea)
	save(t, s, want, persistence.Snapshot{Job: "job", Key: "b", Epoch: eb})

	s = reopen(s)
	checkEpoch(t, s, "job", "a", ea)
	checkEpoch(t, s, "job", "b", eb) // kept although b's snapshot was deleted
	checkSnapshot(t, load(t, s, "job", "a"), want)
	next := acquire(t, s, "job", "a")
	if next <= ea {
		t.Fatalf("Acquire after reopen = %d, want more than %d", next, ea)
	}
	checkFenced(t, s.Save(ctx(t), []persistence.Snapshot{fencedSnap("job", "a", "stale", ea)}),
		persistence.FencedError{Job: "job", Key: "a", Epoch: ea, Holder: next})

	s = reopen(s)
	checkEpoch(t, s, "job", "a", next)
	checkSnapshot(t, load(t, s, "job", "a"), want)
	save(t, s, fencedSnap("job", "a", "after", next))
}
