package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	for _, tc := range slices.Concat(partsCases, ownedCases) {
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
	{"SaveOffsetsOutOfOrder", testSaveOffsetsOutOfOrder},
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

// checkSnapshot fails unless got holds want's job, key, state and offsets
// (in order). Nil and empty offsets are equal.
func checkSnapshot(t *testing.T, got, want persistence.Snapshot) {
	t.Helper()
	if got.Job != want.Job || got.Key != want.Key {
		t.Errorf("Load returned job/key %q/%q, want %q/%q", got.Job, got.Key, want.Job, want.Key)
	}
	if !bytes.Equal(got.State, want.State) {
		t.Errorf("Load(%q, %q).State = %q, want %q", want.Job, want.Key, trunc(got.State), trunc(want.State))
	}
	if !slices.Equal(got.Offsets, want.Offsets) {
		t.Errorf("Load(%q, %q).Offsets = %v, want %v", want.Job, want.Key, got.Offsets, want.Offsets)
	}
	if err := got.Offsets.Check(); err != nil {
		t.Errorf("Load(%q, %q).Offsets: %v", want.Job, want.Key, err)
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
	return persistence.Snapshot{Job: job, Key: key, State: []byte(state), Offsets: record.OffsetsOf(offsets)}
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

// testSaveOffsetsOutOfOrder: offsets not in ascending order of partition,
// or with a partition twice, are refused before anything is written.
func testSaveOffsetsOutOfOrder(t *testing.T, s persistence.Store) {
	for _, bad := range []record.Offsets{
		{{Partition: "p/1", Offset: 1}, {Partition: "p/0", Offset: 2}},
		{{Partition: "p/0", Offset: 1}, {Partition: "p/0", Offset: 2}},
	} {
		err := s.Save(ctx(t), []persistence.Snapshot{
			{Job: "job", Key: "ok", State: []byte("b")},
			{Job: "job", Key: "k", State: []byte("b"), Offsets: bad},
		})
		if err == nil || errors.Is(err, persistence.ErrFenced) {
			t.Fatalf("Save with offsets %v = %v, want an error", bad, err)
		}
		mustMissing(t, s, "job", "ok")
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
		persistence.Snapshot{Job: "job", Key: "a", State: nil, Offsets: record.OffsetsOf(map[string]int64{"p/0": 3})},
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
