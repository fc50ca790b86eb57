package storetest

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

func testReturnedCopies(t *testing.T, s persistence.Store) {
	want := snap("job", "k", "state", map[string]int64{"p/0": 1})
	save(t, s, want)
	got := load(t, s, "job", "k")
	got.State[0] = 'X'
	got.Offsets[0].Offset = 99
	got.Offsets.Set("p/9", 9)
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
	offsets := record.Offsets{{Partition: "p/0", Offset: 1}}
	batch := []persistence.Snapshot{{Job: "job", Key: "k", State: state, Offsets: offsets}}
	save(t, s, batch...)
	state[0] = 'X'
	offsets[0].Offset = 99
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
					if string(got.State) != state || !hasOffset(got.Offsets, "p/0", int64(i)) {
						return fmt.Errorf("Load(%s) = %q %v, want %q p/0=%d", own, got.State, got.Offsets, state, i)
					}
					sh, err := s.Load(c, "job", "shared")
					if err != nil {
						return fmt.Errorf("Load shared: %w", err)
					}
					// State and offsets of one snapshot travel together.
					var sw, si int
					if _, err := fmt.Sscanf(string(sh.State), "w%d-r%d", &sw, &si); err != nil || !hasOffset(sh.Offsets, "p/0", int64(si)) {
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

// hasOffset reports whether o holds off for part.
func hasOffset(o record.Offsets, part string, off int64) bool {
	got, ok := o.Get(part)
	return ok && got == off
}
