package storetest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// timerSnap is a snapshot of key with a pending timer at at.
func timerSnap(job string, key record.Key, state string, at int64) persistence.Snapshot {
	sn := snap(job, key, state, map[string]int64{"p/0": 1})
	sn.HasTimer, sn.NextTimer = true, at
	return sn
}

func dueTimers(t *testing.T, s persistence.Store, job string, upTo int64, limit int) []persistence.TimerDue {
	t.Helper()
	got, err := s.DueTimers(ctx(t), job, upTo, limit)
	if err != nil {
		t.Fatalf("DueTimers(%q, %d, %d): %v", job, upTo, limit, err)
	}
	return got
}

// checkDue fails unless DueTimers(job, upTo, limit) returns exactly want.
func checkDue(t *testing.T, s persistence.Store, job string, upTo int64, limit int, want ...persistence.TimerDue) {
	t.Helper()
	if got := dueTimers(t, s, job, upTo, limit); !slices.Equal(got, want) {
		t.Fatalf("DueTimers(%q, %d, %d) = %v, want %v", job, upTo, limit, got, want)
	}
}

// checkIndex fails unless job's whole timer index is want (in order).
func checkIndex(t *testing.T, s persistence.Store, job string, want ...persistence.TimerDue) {
	t.Helper()
	checkDue(t, s, job, math.MaxInt64, math.MaxInt32, want...)
}

type due = persistence.TimerDue

func td(key record.Key, at int64) due { return due{Key: key, At: at} }

func testTimersFollowSaves(t *testing.T, s persistence.Store) {
	checkIndex(t, s, "job")
	save(t, s, timerSnap("job", "a", "a1", 100), timerSnap("job", "b", "b1", 50), snap("job", "c", "c1", nil))
	checkIndex(t, s, "job", td("b", 50), td("a", 100))
	// Snapshots with timers are ordinary snapshots otherwise.
	checkSnapshot(t, load(t, s, "job", "a"), snap("job", "a", "a1", map[string]int64{"p/0": 1}))
	checkKeys(t, s, "job", "a", "b", "c")

	save(t, s, timerSnap("job", "a", "a2", 10)) // earlier
	checkIndex(t, s, "job", td("a", 10), td("b", 50))
	save(t, s, timerSnap("job", "b", "b2", 200)) // later
	checkIndex(t, s, "job", td("a", 10), td("b", 200))
	save(t, s, timerSnap("job", "c", "c2", 200)) // a key that had none
	checkIndex(t, s, "job", td("a", 10), td("b", 200), td("c", 200))

	// Clearing the timer removes the key from the index, not the snapshot;
	// NextTimer without HasTimer means nothing.
	cleared := snap("job", "a", "a3", nil)
	cleared.NextTimer = 5
	save(t, s, cleared)
	checkIndex(t, s, "job", td("b", 200), td("c", 200))
	checkSnapshot(t, load(t, s, "job", "a"), cleared)

	// Deleting the snapshot removes it too, even with HasTimer set.
	del := timerSnap("job", "b", "", 1)
	save(t, s, del)
	mustMissing(t, s, "job", "b")
	checkIndex(t, s, "job", td("c", 200))
	save(t, s, timerSnap("job", "never-saved", "", 1))
	checkIndex(t, s, "job", td("c", 200))

	// Within a batch the last snapshot of a key wins, timer included.
	save(t, s, timerSnap("job", "d", "d", 5), snap("job", "d", "d, no timer", nil),
		snap("job", "e", "e", nil), timerSnap("job", "e", "e", 7),
		timerSnap("job", "f", "f", 1), timerSnap("job", "f", "f", 300),
		timerSnap("job", "c", "c3", 3), timerSnap("job", "c", "", 3))
	checkIndex(t, s, "job", td("e", 7), td("f", 300))
	checkKeys(t, s, "job", "a", "d", "e", "f")

	// The returned slice is the caller's.
	got := dueTimers(t, s, "job", 1000, 10)
	got[0] = td("mutated", -1)
	checkIndex(t, s, "job", td("e", 7), td("f", 300))
}

func testTimersDueOrder(t *testing.T, s persistence.Store) {
	all := []due{
		td("min", persistence.MinTimer),
		td("x", -5),
		td("n", -1),
		td("", 0), td("\x00", 0), td("a", 0), td("b", 0), td("{b}", 0), td("\xff", 0), // equal: byte order
		td("one", 1),
		td("big", 1<<50),
		td("max", persistence.MaxTimer),
	}
	// Saved out of order and in two batches.
	var batch []persistence.Snapshot
	for i := len(all) - 1; i >= 0; i-- {
		batch = append(batch, timerSnap("job", all[i].Key, "s", all[i].At))
	}
	save(t, s, batch[:5]...)
	save(t, s, batch[5:]...)
	checkIndex(t, s, "job", all...)

	for _, tc := range []struct {
		upTo  int64
		limit int
		want  []due
	}{
		{math.MinInt64, 100, nil},
		{persistence.MinTimer - 1, 100, nil},
		{persistence.MinTimer, 100, all[:1]},
		{-6, 100, all[:1]},
		{-5, 100, all[:2]}, // upTo is inclusive
		{-2, 100, all[:2]},
		{-1, 100, all[:3]},
		{0, 100, all[:9]},
		{1, 100, all[:10]},
		{1<<50 - 1, 100, all[:10]},
		{persistence.MaxTimer - 1, 100, all[:11]},
		{persistence.MaxTimer, 100, all},
		{math.MaxInt64, 100, all},
		{0, 0, nil},
		{0, -1, nil},
		{math.MaxInt64, math.MinInt, nil},
		{0, 1, all[:1]},
		{0, 5, all[:5]}, // cuts through equal times, in key order
		{0, 9, all[:9]},
		{0, 10, all[:9]},
		{math.MaxInt64, len(all) - 1, all[:len(all)-1]},
	} {
		checkDue(t, s, "job", tc.upTo, tc.limit, tc.want...)
	}
	checkIndex(t, s, "unknown")
	checkIndex(t, s, "jo")
}

func testTimersJobsIsolated(t *testing.T, s persistence.Store) {
	jobs := []string{"j", "j2", "j:", "{j}", "j:timers", ""}
	for i, job := range jobs {
		save(t, s, timerSnap(job, "k", "state", int64(i)), timerSnap(job, record.Key(job), "state", -int64(i)))
	}
	for i, job := range jobs {
		want := []due{td(record.Key(job), -int64(i)), td("k", int64(i))}
		if i == 0 {
			want = []due{td("j", 0), td("k", 0)}
		}
		if job == "" {
			want = []due{td("", -int64(i)), td("k", int64(i))}
		}
		checkIndex(t, s, job, want...)
	}
	save(t, s, snap("j", "k", "", nil), snap("j2", "k", "no timer", nil))
	checkIndex(t, s, "j", td("j", 0))
	checkIndex(t, s, "j2", td("j2", -1))
	checkIndex(t, s, "j:", td("j:", -2), td("k", 2))
	checkIndex(t, s, "j:timers", td("j:timers", -4), td("k", 4))
}

func testTimersFenced(t *testing.T, s persistence.Store) {
	withTimer := func(sn persistence.Snapshot, at int64) persistence.Snapshot {
		sn.HasTimer, sn.NextTimer = true, at
		return sn
	}
	e1 := acquire(t, s, "job", "k")
	save(t, s, withTimer(fencedSnap("job", "k", "at e1", e1), 100))
	checkIndex(t, s, "job", td("k", 100))
	e2 := acquire(t, s, "job", "k")
	c := ctx(t)
	want := persistence.FencedError{Job: "job", Key: "k", Epoch: e1, Holder: e2}
	// A stale owner can neither move, clear nor delete the timer.
	checkFenced(t, s.Save(c, []persistence.Snapshot{withTimer(fencedSnap("job", "k", "stale", e1), 5)}), want)
	checkIndex(t, s, "job", td("k", 100))
	checkFenced(t, s.Save(c, []persistence.Snapshot{fencedSnap("job", "k", "stale", e1)}), want)
	checkIndex(t, s, "job", td("k", 100))
	checkFenced(t, s.Save(c, []persistence.Snapshot{{Job: "job", Key: "k", Epoch: e1}}), want)
	checkIndex(t, s, "job", td("k", 100))
	// Nor can an unfenced writer once the key is acquired.
	checkFenced(t, s.Save(c, []persistence.Snapshot{timerSnap("job", "k", "legacy", 1)}),
		persistence.FencedError{Job: "job", Key: "k", Epoch: 0, Holder: e2})
	checkIndex(t, s, "job", td("k", 100))

	// In a mixed batch, the fresh snapshots' timers land and the fenced ones'
	// do not.
	eo := acquire(t, s, "job", "other")
	checkFenced(t, s.Save(c, []persistence.Snapshot{
		withTimer(fencedSnap("job", "k", "stale", e1), 1),
		withTimer(fencedSnap("job", "other", "fresh", eo), 50),
		withTimer(fencedSnap("job", "new", "unfenced", 0), 60),
	}), want)
	checkIndex(t, s, "job", td("other", 50), td("new", 60), td("k", 100))
	checkSnapshot(t, load(t, s, "job", "k"), fencedSnap("job", "k", "at e1", e1))

	// The holder moves and then clears it.
	save(t, s, withTimer(fencedSnap("job", "k", "at e2", e2), 7))
	checkIndex(t, s, "job", td("k", 7), td("other", 50), td("new", 60))
	save(t, s, fencedSnap("job", "k", "at e2, done", e2))
	checkIndex(t, s, "job", td("other", 50), td("new", 60))
}

func testTimersRange(t *testing.T, s persistence.Store) {
	save(t, s, timerSnap("job", "a", "a", 1))
	c := ctx(t)
	for _, at := range []int64{persistence.MaxTimer + 1, persistence.MinTimer - 1, math.MaxInt64, math.MinInt64} {
		err := s.Save(c, []persistence.Snapshot{timerSnap("job", "b", "b", 2), timerSnap("job", "a", "a2", at)})
		if !errors.Is(err, persistence.ErrTimerRange) || errors.Is(err, persistence.ErrFenced) {
			t.Fatalf("Save with timer %d = %v, want ErrTimerRange", at, err)
		}
		// Refused whole: nothing of the batch was written.
		mustMissing(t, s, "job", "b")
		checkSnapshot(t, load(t, s, "job", "a"), timerSnap("job", "a", "a", 1))
		checkIndex(t, s, "job", td("a", 1))
	}
	// Out-of-range values that are not timers are fine: NextTimer without
	// HasTimer, and a timer on a deleting snapshot.
	noTimer := snap("job", "b", "b", nil)
	noTimer.NextTimer = math.MaxInt64
	save(t, s, noTimer, timerSnap("job", "gone", "", math.MinInt64))
	checkIndex(t, s, "job", td("a", 1))
	checkKeys(t, s, "job", "a", "b")
}

// testTimersConcurrent runs writers moving their keys' timers against
// readers of the index: every answer is sorted, bounded and without
// duplicates, and the final index is what the last writes say.
func testTimersConcurrent(t *testing.T, s persistence.Store) {
	const writers, readers, rounds = 4, 2, 40
	c := ctx(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, writers+readers)
	last := func(w, i int) int64 { return int64((i*7+w)%50) - 25 }
	for w := range writers {
		wg.Go(func() {
			for i := range rounds {
				a := timerSnap("job", record.Key(fmt.Sprint("w", w, "a")), "s", last(w, i))
				b := timerSnap("job", record.Key(fmt.Sprint("w", w, "b")), "s", 0)
				if i%3 == 0 {
					b.HasTimer = false
				}
				if err := s.Save(c, []persistence.Snapshot{a, b}); err != nil {
					errs <- fmt.Errorf("writer %d: Save: %w", w, err)
					return
				}
			}
		})
	}
	var rg sync.WaitGroup
	for r := range readers {
		rg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				upTo, limit := int64(n%60-30), n%(2*writers+1)+1
				got, err := s.DueTimers(c, "job", upTo, limit)
				if err != nil {
					errs <- fmt.Errorf("reader %d: DueTimers: %w", r, err)
					return
				}
				if err := checkDueAnswer(got, upTo, limit); err != nil {
					errs <- fmt.Errorf("reader %d: DueTimers(%d, %d) = %v: %w", r, upTo, limit, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var want []due
	for w := range writers {
		want = append(want, td(record.Key(fmt.Sprint("w", w, "a")), last(w, rounds-1)))
		if (rounds-1)%3 != 0 {
			want = append(want, td(record.Key(fmt.Sprint("w", w, "b")), 0))
		}
	}
	slices.SortFunc(want, compareDue)
	checkIndex(t, s, "job", want...)
}

func compareDue(a, b due) int {
	if a.At != b.At {
		if a.At < b.At {
			return -1
		}
		return 1
	}
	if a.Key < b.Key {
		return -1
	}
	if a.Key > b.Key {
		return 1
	}
	return 0
}

// checkDueAnswer checks what holds of any DueTimers answer.
func checkDueAnswer(got []due, upTo int64, limit int) error {
	if len(got) > limit {
		return fmt.Errorf("%d entries, limit %d", len(got), limit)
	}
	seen := map[record.Key]bool{}
	for i, d := range got {
		if d.At > upTo {
			return fmt.Errorf("entry %v after upTo", d)
		}
		if seen[d.Key] {
			return fmt.Errorf("key %q twice", d.Key)
		}
		seen[d.Key] = true
		if i > 0 && compareDue(got[i-1], d) >= 0 {
			return fmt.Errorf("entries %v and %v out of order", got[i-1], d)
		}
	}
	return nil
}

func testTimersSurviveReopen(t *testing.T, s persistence.Store, reopen func(persistence.Store) persistence.Store) {
	e := acquire(t, s, "job", "fenced")
	f := fencedSnap("job", "fenced", "f", e)
	f.HasTimer, f.NextTimer = true, -7
	save(t, s, timerSnap("job", "a", "a", 100), timerSnap("job", "b", "b", 0), timerSnap("job", "c", "c", 5),
		snap("job", "plain", "p", nil), timerSnap("other", "a", "o", persistence.MaxTimer), f)
	save(t, s, timerSnap("job", "a", "a", 1), snap("job", "b", "b, done", nil), snap("job", "c", "", nil),
		timerSnap("job", "min", "m", persistence.MinTimer))
	want := []due{td("min", persistence.MinTimer), td("fenced", -7), td("a", 1)}

	s = reopen(s)
	checkIndex(t, s, "job", want...)
	checkIndex(t, s, "other", td("a", persistence.MaxTimer))
	checkDue(t, s, "job", 0, 2, want[:2]...)
	save(t, s, timerSnap("job", "plain", "p", 1), snap("job", "a", "a, done", nil))
	want = []due{td("min", persistence.MinTimer), td("fenced", -7), td("plain", 1)}
	checkIndex(t, s, "job", want...)

	s = reopen(s)
	checkIndex(t, s, "job", want...)
	checkKeys(t, s, "job", "a", "b", "fenced", "min", "plain")
}
