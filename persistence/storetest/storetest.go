package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// Option adjusts Run.
type Option func(*suite)

// WithReopen gives the suite a way to reopen a store: reopen closes old and
// returns a new store over the same data, as a restarted process would open
// it, failing the test when it cannot. Without it the subtests about
// durability across reopening (EpochSurvivesReopen, TimersSurviveReopen) are
// skipped.
func WithReopen(reopen func(t *testing.T, old persistence.Store) persistence.Store) Option {
	return func(s *suite) { s.reopen = reopen }
}

type suite struct {
	reopen   func(t *testing.T, old persistence.Store) persistence.Store
	rollback func(t *testing.T, s persistence.Store) (restore func())
}

// Run runs the conformance suite as subtests of t. open returns a fresh, empty
// store for one subtest and fails the test (it does not return) when the store
// cannot be opened. Subtest names are stable, so
// `go test -run 'TestStore.*/SaveBatch'` selects one.
func Run(t *testing.T, open func(t *testing.T) persistence.Store, opts ...Option) {
	t.Helper()
	var su suite
	for _, o := range opts {
		o(&su)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s)
		})
	}
	for _, tc := range partsCases {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s)
		})
	}
	for _, tc := range rollbackCases {
		t.Run(tc.name, func(t *testing.T) {
			if su.rollback == nil {
				t.Skip("the store cannot go back in time under an open handle (Run without WithRollback)")
			}
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			var reopen func(persistence.Store) persistence.Store
			if su.reopen != nil {
				reopen = func(old persistence.Store) persistence.Store {
					t.Helper()
					s := su.reopen(t, old)
					t.Cleanup(func() { _ = s.Close() })
					return s
				}
			}
			tc.fn(t, s, func() func() { t.Helper(); return su.rollback(t, s) }, reopen)
		})
	}
	for _, tc := range reopenCases {
		t.Run(tc.name, func(t *testing.T) {
			if su.reopen == nil {
				t.Skip("the store cannot be reopened (Run without WithReopen)")
			}
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s, func(old persistence.Store) persistence.Store {
				t.Helper()
				s := su.reopen(t, old)
				t.Cleanup(func() { _ = s.Close() })
				return s
			})
		})
	}
}

var cases = []struct {
	name string
	fn   func(t *testing.T, s persistence.Store)
}{
	{"LoadMissing", testLoadMissing},
	{"SaveLoad", testSaveLoad},
	{"SaveNilOffsets", testSaveNilOffsets},
	{"SaveBatch", testSaveBatch},
	{"SaveBatchSameKeyLastWins", testSaveBatchSameKeyLastWins},
	{"SaveEmptyBatch", testSaveEmptyBatch},
	{"SaveReplaces", testSaveReplaces},
	{"SaveEmptyStateDeletes", testSaveEmptyStateDeletes},
	{"Keys", testKeys},
	{"JobsIsolated", testJobsIsolated},
	{"CommitOffsets", testCommitOffsets},
	{"CommitOffsetsNeverGoBack", testCommitOffsetsNeverGoBack},
	{"CommitOffsetsExtremes", testCommitOffsetsExtremes},
	{"ReturnedCopies", testReturnedCopies},
	{"ArgumentsNotRetained", testArgumentsNotRetained},
	{"Concurrent", testConcurrent},
	{"Closed", testClosed},
	{"OddKeys", testOddKeys},
	{"AcquireGrows", testAcquireGrows},
	{"AcquireConcurrent", testAcquireConcurrent},
	{"SaveFenced", testSaveFenced},
	{"SaveFencedEpochZero", testSaveFencedEpochZero},
	{"SaveFencedMixedBatch", testSaveFencedMixedBatch},
	{"SaveFencedRace", testSaveFencedRace},
	{"TimersFollowSaves", testTimersFollowSaves},
	{"TimersDueOrder", testTimersDueOrder},
	{"TimersJobsIsolated", testTimersJobsIsolated},
	{"TimersFenced", testTimersFenced},
	{"TimersRange", testTimersRange},
	{"TimersConcurrent", testTimersConcurrent},
	{"LineageStable", testLineageStable},
	{"LineageCommitSeen", testLineageCommitSeen},
	{"LineageRollbackRefused", testLineageRollbackRefused},
	{"LineageRefound", testLineageRefound},
	{"LineageGuard", testLineageGuard},
	{"LineageGuardRecover", testLineageGuardRecover},
}

var reopenCases = []struct {
	name string
	fn   func(t *testing.T, s persistence.Store, reopen func(persistence.Store) persistence.Store)
}{
	{"EpochSurvivesReopen", testEpochSurvivesReopen},
	{"TimersSurviveReopen", testTimersSurviveReopen},
	{"LineageSurvivesReopen", testLineageSurvivesReopen},
	{"PartsSurviveReopen", testPartsSurviveReopen},
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func save(t *testing.T, s persistence.Store, batch ...persistence.Snapshot) {
	t.Helper()
	if err := s.Save(ctx(t), batch); err != nil {
		t.Fatalf("Save(%d snapshots): %v", len(batch), err)
	}
}

func load(t *testing.T, s persistence.Store, job string, key record.Key) persistence.Snapshot {
	t.Helper()
	got, err := s.Load(ctx(t), job, key)
	if err != nil {
		t.Fatalf("Load(%q, %q): %v", job, key, err)
	}
	return got
}

func mustMissing(t *testing.T, s persistence.Store, job string, key record.Key) {
	t.Helper()
	got, err := s.Load(ctx(t), job, key)
	if !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("Load(%q, %q) = %+v, %v; want ErrNotFound", job, key, got, err)
	}
}

// checkSnapshot fails unless got holds want's job, key, state and offsets. A
// nil and an empty offsets map are equal.
func checkSnapshot(t *testing.T, got, want persistence.Snapshot) {
	t.Helper()
	if got.Job != want.Job || got.Key != want.Key {
		t.Errorf("Load returned job/key %q/%q, want %q/%q", got.Job, got.Key, want.Job, want.Key)
	}
	if !bytes.Equal(got.State, want.State) {
		t.Errorf("Load(%q, %q).State = %q, want %q", want.Job, want.Key, trunc(got.State), trunc(want.State))
	}
	if !maps.Equal(got.Offsets, want.Offsets) {
		t.Errorf("Load(%q, %q).Offsets = %v, want %v", want.Job, want.Key, got.Offsets, want.Offsets)
	}
}

func trunc(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

func keys(t *testing.T, s persistence.Store, job string) []record.Key {
	t.Helper()
	ks, err := s.Keys(ctx(t), job)
	if err != nil {
		t.Fatalf("Keys(%q): %v", job, err)
	}
	slices.Sort(ks)
	return ks
}

func checkKeys(t *testing.T, s persistence.Store, job string, want ...record.Key) {
	t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	if got := keys(t, s, job); !slices.Equal(got, want) {
		t.Fatalf("Keys(%q) = %q, want %q", job, got, want)
	}
}

func committed(t *testing.T, s persistence.Store, job string) map[string]int64 {
	t.Helper()
	got, err := s.CommittedOffsets(ctx(t), job)
	if err != nil {
		t.Fatalf("CommittedOffsets(%q): %v", job, err)
	}
	return got
}

func commit(t *testing.T, s persistence.Store, job string, offsets map[string]int64) {
	t.Helper()
	if err := s.CommitOffsets(ctx(t), job, offsets); err != nil {
		t.Fatalf("CommitOffsets(%q, %v): %v", job, offsets, err)
	}
}

func snap(job string, key record.Key, state string, offsets map[string]int64) persistence.Snapshot {
	return persistence.Snapshot{Job: job, Key: key, State: []byte(state), Offsets: offsets}
}

func testLoadMissing(t *testing.T, s persistence.Store) {
	mustMissing(t, s, "job", "nope")
	save(t, s, snap("job", "k", "v", nil))
	mustMissing(t, s, "job", "nope")
	mustMissing(t, s, "other", "k")
}

func testSaveLoad(t *testing.T, s persistence.Store) {
	want := snap("job", "user-42", "\x00binary\xffstate\x00",
		map[string]int64{"users/0": 17, "domains/3": 0, "domains/4": 1 << 40})
	save(t, s, want)
	checkSnapshot(t, load(t, s, "job", "user-42"), want)
}

func testSaveNilOffsets(t *testing.T, s persistence.Store) {
	save(t, s, snap("job", "a", "x", nil), snap("job", "b", "y", map[string]int64{}))
	for _, k := range []record.Key{"a", "b"} {
		if got := load(t, s, "job", k); len(got.Offsets) != 0 {
			t.Errorf("Load(%q).Offsets = %v, want empty", k, got.Offsets)
		}
	}
}

func testSaveBatch(t *testing.T, s persistence.Store) {
	const n = 500
	batch := make([]persistence.Snapshot, n)
	for i := range batch {
		batch[i] = snap("job", record.Key(fmt.Sprintf("key-%04d", i)),
			fmt.Sprintf("state %d %s", i, bytes.Repeat([]byte{byte(i)}, i%300)),
			map[string]int64{"src/0": int64(i), fmt.Sprintf("src/%d", i%7+1): int64(i * 3)})
	}
	save(t, s, batch...)
	for _, want := range batch {
		checkSnapshot(t, load(t, s, "job", want.Key), want)
	}
	want := make([]record.Key, n)
	for i, sn := range batch {
		want[i] = sn.Key
	}
	checkKeys(t, s, "job", want...)
}

func testSaveBatchSameKeyLastWins(t *testing.T, s persistence.Store) {
	save(t, s,
		snap("job", "k", "first", map[string]int64{"p/0": 1}),
		snap("job", "k", "second", map[string]int64{"p/0": 2}),
		snap("job", "gone", "x", nil),
		snap("job", "gone", "", nil),
	)
	checkSnapshot(t, load(t, s, "job", "k"), snap("job", "k", "second", map[string]int64{"p/0": 2}))
	mustMissing(t, s, "job", "gone")
	checkKeys(t, s, "job", "k")
}

func testSaveEmptyBatch(t *testing.T, s persistence.Store) {
	save(t, s)
	save(t, s, []persistence.Snapshot{}...)
	checkKeys(t, s, "job")
}

func testSaveReplaces(t *testing.T, s persistence.Store) {
	save(t, s, snap("job", "k", "old state that is rather long", map[string]int64{"a/0": 5, "b/0": 9}))
	want := snap("job", "k", "new", map[string]int64{"a/0": 6})
	save(t, s, want)
	// The offsets are replaced as a whole, not merged: b/0 is gone.
	checkSnapshot(t, load(t, s, "job", "k"), want)
	checkKeys(t, s, "job", "k")
}

func testSaveEmptyStateDeletes(t *testing.T, s persistence.Store) {
	save(t, s, snap("job", "a", "x", nil), snap("job", "b", "y", nil), snap("job", "c", "z", nil))
	save(t, s,
		persistence.Snapshot{Job: "job", Key: "a", State: nil, Offsets: map[string]int64{"p/0": 3}},
		persistence.Snapshot{Job: "job", Key: "b", State: []byte{}},
		persistence.Snapshot{Job: "job", Key: "never-saved"},
	)
	mustMissing(t, s, "job", "a")
	mustMissing(t, s, "job", "b")
	mustMissing(t, s, "job", "never-saved")
	checkKeys(t, s, "job", "c")
	// A deleted key can be saved again.
	save(t, s, snap("job", "a", "back", nil))
	checkSnapshot(t, load(t, s, "job", "a"), snap("job", "a", "back", nil))
	checkKeys(t, s, "job", "a", "c")
}

func testKeys(t *testing.T, s persistence.Store) {
	checkKeys(t, s, "job")
	save(t, s, snap("job", "a", "1", nil), snap("job", "b", "2", nil), snap("other", "c", "3", nil))
	save(t, s, snap("job", "a", "1 again", nil))
	checkKeys(t, s, "job", "a", "b")
	checkKeys(t, s, "other", "c")
	checkKeys(t, s, "jo")
	checkKeys(t, s, "job2")
}

func testJobsIsolated(t *testing.T, s persistence.Store) {
	// Job names that are prefixes of each other or contain separators must
	// not share keys.
	jobs := []string{"j", "j2", "j:", "j}", "{j}", "j:state"}
	for i, job := range jobs {
		save(t, s, snap(job, "k", "state of "+job, map[string]int64{"p/0": int64(i)}))
		commit(t, s, job, map[string]int64{"p/0": int64(i + 100)})
	}
	for i, job := range jobs {
		checkSnapshot(t, load(t, s, job, "k"), snap(job, "k", "state of "+job, map[string]int64{"p/0": int64(i)}))
		checkKeys(t, s, job, "k")
		if got, want := committed(t, s, job), map[string]int64{"p/0": int64(i + 100)}; !maps.Equal(got, want) {
			t.Errorf("CommittedOffsets(%q) = %v, want %v", job, got, want)
		}
	}
	save(t, s, snap("j", "k", "", nil))
	mustMissing(t, s, "j", "k")
	checkKeys(t, s, "j")
	for i, job := range jobs[1:] {
		checkSnapshot(t, load(t, s, job, "k"), snap(job, "k", "state of "+job, map[string]int64{"p/0": int64(i + 1)}))
	}
}

func testCommitOffsets(t *testing.T, s persistence.Store) {
	if got := committed(t, s, "job"); len(got) != 0 {
		t.Fatalf("CommittedOffsets of a new job = %v, want empty", got)
	}
	commit(t, s, "job", map[string]int64{"users/0": 10, "users/1": 20})
	commit(t, s, "job", map[string]int64{"domains/0": 7})
	commit(t, s, "job", nil)
	commit(t, s, "job", map[string]int64{})
	want := map[string]int64{"users/0": 10, "users/1": 20, "domains/0": 7}
	if got := committed(t, s, "job"); !maps.Equal(got, want) {
		t.Fatalf("CommittedOffsets = %v, want %v", got, want)
	}
	if got := committed(t, s, "other"); len(got) != 0 {
		t.Fatalf("CommittedOffsets(other) = %v, want empty", got)
	}
}

func testCommitOffsetsNeverGoBack(t *testing.T, s persistence.Store) {
	commit(t, s, "job", map[string]int64{"p/0": 10, "p/1": 10})
	commit(t, s, "job", map[string]int64{"p/0": 5, "p/1": 11})
	commit(t, s, "job", map[string]int64{"p/0": 10})
	want := map[string]int64{"p/0": 10, "p/1": 11}
	if got := committed(t, s, "job"); !maps.Equal(got, want) {
		t.Fatalf("after 10 then 5: CommittedOffsets = %v, want %v", got, want)
	}
	// Numeric, not lexical, order: 9 < 10 < 100.
	commit(t, s, "job", map[string]int64{"p/2": 9})
	commit(t, s, "job", map[string]int64{"p/2": 100})
	commit(t, s, "job", map[string]int64{"p/2": 99})
	if got := committed(t, s, "job")["p/2"]; got != 100 {
		t.Fatalf("p/2 = %d, want 100", got)
	}
}

func testCommitOffsetsExtremes(t *testing.T, s persistence.Store) {
	const big = int64(1)<<62 + 1 // not representable in a float64
	commit(t, s, "job", map[string]int64{"neg": -5, "zero": 0, "big": big, "max": 1<<63 - 1})
	commit(t, s, "job", map[string]int64{"neg": -7, "zero": -1, "big": big - 1})
	want := map[string]int64{"neg": -5, "zero": 0, "big": big, "max": 1<<63 - 1}
	if got := committed(t, s, "job"); !maps.Equal(got, want) {
		t.Fatalf("CommittedOffsets = %v, want %v", got, want)
	}
	commit(t, s, "job", map[string]int64{"neg": -1, "big": big + 1})
	want["neg"], want["big"] = -1, big+1
	if got := committed(t, s, "job"); !maps.Equal(got, want) {
		t.Fatalf("CommittedOffsets = %v, want %v", got, want)
	}
}

func testReturnedCopies(t *testing.T, s persistence.Store) {
	want := snap("job", "k", "state", map[string]int64{"p/0": 1})
	save(t, s, want)
	got := load(t, s, "job", "k")
	got.State[0] = 'X'
	got.Offsets["p/0"] = 99
	got.Offsets["p/9"] = 9
	checkSnapshot(t, load(t, s, "job", "k"), want)

	commit(t, s, "job", map[string]int64{"p/0": 1})
	c := committed(t, s, "job")
	c["p/0"] = 50
	c["p/1"] = 50
	if got := committed(t, s, "job"); !maps.Equal(got, map[string]int64{"p/0": 1}) {
		t.Fatalf("CommittedOffsets after mutating a returned map = %v", got)
	}

	ks := keys(t, s, "job")
	ks[0] = "mutated"
	checkKeys(t, s, "job", "k")
}

func testArgumentsNotRetained(t *testing.T, s persistence.Store) {
	state := []byte("state")
	offsets := map[string]int64{"p/0": 1}
	batch := []persistence.Snapshot{{Job: "job", Key: "k", State: state, Offsets: offsets}}
	save(t, s, batch...)
	state[0] = 'X'
	offsets["p/0"] = 99
	batch[0].Key = "other"
	checkSnapshot(t, load(t, s, "job", "k"), snap("job", "k", "state", map[string]int64{"p/0": 1}))

	co := map[string]int64{"p/0": 5}
	commit(t, s, "job", co)
	co["p/0"] = 1
	co["p/1"] = 1
	if got := committed(t, s, "job"); !maps.Equal(got, map[string]int64{"p/0": 5}) {
		t.Fatalf("CommittedOffsets after mutating the argument = %v", got)
	}
}

func testConcurrent(t *testing.T, s persistence.Store) {
	const workers, rounds = 8, 40
	c := ctx(t)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			err := func() error {
				own := record.Key(fmt.Sprintf("own-%d", w))
				for i := range rounds {
					state := fmt.Sprintf("w%d-r%d", w, i)
					batch := []persistence.Snapshot{
						snap("job", own, state, map[string]int64{"p/0": int64(i)}),
						snap("job", "shared", state, map[string]int64{"p/0": int64(i)}),
					}
					if err := s.Save(c, batch); err != nil {
						return fmt.Errorf("Save: %w", err)
					}
					got, err := s.Load(c, "job", own)
					if err != nil {
						return fmt.Errorf("Load own: %w", err)
					}
					if string(got.State) != state || got.Offsets["p/0"] != int64(i) {
						return fmt.Errorf("Load(%s) = %q %v, want %q p/0=%d", own, got.State, got.Offsets, state, i)
					}
					sh, err := s.Load(c, "job", "shared")
					if err != nil {
						return fmt.Errorf("Load shared: %w", err)
					}
					// State and offsets of one snapshot travel together.
					var sw, si int
					if _, err := fmt.Sscanf(string(sh.State), "w%d-r%d", &sw, &si); err != nil || sh.Offsets["p/0"] != int64(si) {
						return fmt.Errorf("Load(shared) = %q %v: state and offsets disagree", sh.State, sh.Offsets)
					}
					if err := s.CommitOffsets(c, "job", map[string]int64{"p/0": int64(w*rounds + i), fmt.Sprintf("w/%d", w): int64(i)}); err != nil {
						return fmt.Errorf("CommitOffsets: %w", err)
					}
					if _, err := s.CommittedOffsets(c, "job"); err != nil {
						return fmt.Errorf("CommittedOffsets: %w", err)
					}
					if _, err := s.Keys(c, "job"); err != nil {
						return fmt.Errorf("Keys: %w", err)
					}
				}
				return nil
			}()
			if err != nil {
				errs <- fmt.Errorf("worker %d: %w", w, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	want := map[string]int64{"p/0": workers*rounds - 1}
	for w := range workers {
		want[fmt.Sprintf("w/%d", w)] = rounds - 1
	}
	if got := committed(t, s, "job"); !maps.Equal(got, want) {
		t.Fatalf("CommittedOffsets = %v, want %v", got, want)
	}
	if got := keys(t, s, "job"); len(got) != workers+1 {
		t.Fatalf("Keys = %q, want %d keys", got, workers+1)
	}
}

func testClosed(t *testing.T, s persistence.Store) {
	save(t, s, snap("job", "k", "v", nil))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	c := ctx(t)
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, persistence.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", op, err)
		}
	}
	_, err := s.Load(c, "job", "k")
	check("Load", err)
	check("Save", s.Save(c, []persistence.Snapshot{snap("job", "k", "v2", nil)}))
	check("Save(empty batch)", s.Save(c, nil))
	_, err = s.Keys(c, "job")
	check("Keys", err)
	check("CommitOffsets", s.CommitOffsets(c, "job", map[string]int64{"p/0": 1}))
	check("CommitOffsets(empty)", s.CommitOffsets(c, "job", nil))
	_, err = s.CommittedOffsets(c, "job")
	check("CommittedOffsets", err)
	_, err = s.Acquire(c, "job", "k")
	check("Acquire", err)
	_, err = s.Epoch(c, "job", "k")
	check("Epoch", err)
	_, err = s.DueTimers(c, "job", 0, 10)
	check("DueTimers", err)
}

func testOddKeys(t *testing.T, s persistence.Store) {
	odd := []record.Key{
		"", "a:b", "a:state:b", "{", "}", "{tag}", "}{", "with space", " ", "tab\tnl\n",
		"ключ", "键", "🔑", "\x00nul", "\xff\xfeinvalid utf8", "*", "?", "[a-z]", "%25", "%",
	}
	jobs := []string{"job", "job with space:{x}", "работа", ""}
	for _, job := range jobs {
		var batch []persistence.Snapshot
		for i, k := range odd {
			batch = append(batch, snap(job, k, fmt.Sprintf("state %q %d", k, i), map[string]int64{string(k): int64(i), "p:{0}": 1}))
		}
		save(t, s, batch...)
		for _, want := range batch {
			checkSnapshot(t, load(t, s, job, want.Key), want)
		}
		checkKeys(t, s, job, odd...)
		commit(t, s, job, map[string]int64{"ключ/0": 1, "{p}:1": 2, "": 3})
		if got, want := committed(t, s, job), map[string]int64{"ключ/0": 1, "{p}:1": 2, "": 3}; !maps.Equal(got, want) {
			t.Fatalf("CommittedOffsets(%q) = %v, want %v", job, got, want)
		}
	}
	// Deleting one odd key leaves its look-alikes.
	save(t, s, snap("job", "{", "", nil), snap("job", "", "", nil))
	mustMissing(t, s, "job", "{")
	mustMissing(t, s, "job", "")
	checkSnapshot(t, load(t, s, "job", "}"), snap("job", "}", fmt.Sprintf("state %q %d", "}", 4), map[string]int64{"}": 4, "p:{0}": 1}))
	if got := keys(t, s, "job"); len(got) != len(odd)-2 {
		t.Fatalf("Keys after two deletes = %q", got)
	}
}

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
	return persistence.Snapshot{Job: job, Key: key, State: []byte(state), Offsets: map[string]int64{"p/0": epoch}, Epoch: epoch}
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
