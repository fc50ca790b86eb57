package actors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/stateparts"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/persistence/embedded"
	"github.com/joinery/joinery/record"
)

// flakyStore fails the first n Saves, then passes through. It is a fault
// injector around the real embedded store.
type flakyStore struct {
	persistence.Store
	fail  atomic.Int32
	saves atomic.Int32
	sizes chan int
}

func (s *flakyStore) Save(ctx context.Context, b []persistence.Snapshot) error {
	s.saves.Add(1)
	if s.fail.Add(-1) >= 0 {
		return errors.New("injected failure")
	}
	if s.sizes != nil {
		s.sizes <- len(b)
	}
	return s.Store.Save(ctx, b)
}

func newEmbedded(t testing.TB) persistence.Store {
	s, err := embedded.New(embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func snap(key string, v int) persistence.Snapshot {
	return persistence.Snapshot{Job: "j", Key: record.Key(key), State: []byte(fmt.Sprint(v)), Offsets: record.OffsetsOf(map[string]int64{"s/0": int64(v)})}
}

// TestWriterDurableBeforeCallback checks that every callback runs after its
// snapshot is in the store, from many concurrent submitters, and that the
// last snapshot of a key wins.
func TestWriterDurableBeforeCallback(t *testing.T) {
	store := newEmbedded(t)
	w := NewWriter(store, WriterOptions{MaxBatch: 16})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("k%d", g)
			for i := 1; i <= 200; i++ {
				done := make(chan error, 1)
				w.Submit(snap(key, i), func(err error) { done <- err })
				if err := <-done; err != nil {
					t.Errorf("submit: %v", err)
					return
				}
				got, err := store.Load(context.Background(), "j", record.Key(key))
				if err != nil || string(got.State) != fmt.Sprint(i) {
					t.Errorf("after callback %s = %q, %v; want %d", key, got.State, err, i)
					return
				}
			}
		}()
	}
	wg.Wait()
	w.Close(context.Background())
}

// TestWriterBatches checks that queued snapshots are written together.
func TestWriterBatches(t *testing.T) {
	fs := &flakyStore{Store: newEmbedded(t), sizes: make(chan int, 1000)}
	w := NewWriter(fs, WriterOptions{MaxBatch: 64})
	var done sync.WaitGroup
	done.Add(500)
	for i := range 500 {
		w.Submit(snap(fmt.Sprint(i), i), func(error) { done.Done() })
	}
	done.Wait()
	w.Close(context.Background())
	close(fs.sizes)
	max := 0
	for n := range fs.sizes {
		if n > 64 {
			t.Errorf("batch of %d > MaxBatch 64", n)
		}
		max = maxInt(max, n)
	}
	if max < 2 {
		t.Errorf("largest batch %d: snapshots were not batched", max)
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// TestWriterRetriesUntilDurable checks that a failing store stalls the
// callback (no ack before durability) and that the write lands once the
// store recovers.
func TestWriterRetriesUntilDurable(t *testing.T) {
	fs := &flakyStore{Store: newEmbedded(t)}
	fs.fail.Store(3)
	w := NewWriter(fs, WriterOptions{MaxBackoff: 10 * time.Millisecond})
	done := make(chan error, 1)
	w.Submit(snap("k", 1), func(err error) { done <- err })
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("write never completed")
	}
	if n := fs.saves.Load(); n != 4 {
		t.Errorf("saves = %d, want 3 failures + 1 success", n)
	}
	if _, err := fs.Load(context.Background(), "j", "k"); err != nil {
		t.Errorf("load after recovery: %v", err)
	}
	w.Close(context.Background())
}

// TestWriterCloseGivesUp checks that Close with an expired context fails
// pending callbacks instead of hanging, and Submit after Close fails at once.
func TestWriterCloseGivesUp(t *testing.T) {
	fs := &flakyStore{Store: newEmbedded(t)}
	fs.fail.Store(1 << 30)
	w := NewWriter(fs, WriterOptions{MaxBackoff: 5 * time.Millisecond})
	done := make(chan error, 1)
	w.Submit(snap("k", 1), func(err error) { done <- err })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	w.Close(ctx)
	if err := <-done; err == nil {
		t.Fatal("callback of a never-written snapshot got nil")
	}
	after := make(chan error, 1)
	w.Submit(snap("k", 2), func(err error) { after <- err })
	if err := <-after; !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("submit after close: %v, want ErrClosed", err)
	}
	w.Close(context.Background()) // idempotent
}

// gateStore holds every Save until the gate opens (a fault injector around
// the real embedded store), so that later submissions queue into one batch.
type gateStore struct {
	persistence.Store
	gate    chan struct{}
	entered chan struct{} // when not nil, told (without blocking) that a Save waits at the gate
}

func (s *gateStore) Save(ctx context.Context, b []persistence.Snapshot) error {
	if s.entered != nil {
		select {
		case s.entered <- struct{}{}:
		default:
		}
	}
	<-s.gate
	return s.Store.Save(ctx, b)
}

// blockedWriter returns a Writer over inner held in its first Save (of
// key "other") until gs.gate closes: what is submitted next queues into
// one batch. first gets the held Save's result.
func blockedWriter(t *testing.T, inner persistence.Store) (w *Writer, gs *gateStore, first chan error) {
	gs = &gateStore{Store: inner, gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	w = NewWriter(gs, WriterOptions{MaxBatch: 16})
	t.Cleanup(func() { w.Close(context.Background()) })
	first = make(chan error, 1)
	w.Submit(persistence.Snapshot{Job: "j", Key: "other", State: []byte("x")}, func(err error) { first <- err })
	<-gs.entered
	return w, gs, first
}

// TestWriterTwoActivationsInOneBatch: snapshots of one key from two
// activations (a stale epoch and the owner's) that meet in one batch are
// not coalesced: the stale one is refused (fenced) and its callback says
// so, the owner's is written. Coalescing them would report the stale
// activation's changes written when they were not.
func TestWriterTwoActivationsInOneBatch(t *testing.T) {
	ctx := context.Background()
	inner := newEmbedded(t)
	stale, err := inner.Acquire(ctx, "j", "k")
	if err != nil {
		t.Fatal(err)
	}
	owner, err := inner.Acquire(ctx, "j", "k")
	if err != nil {
		t.Fatal(err)
	}
	w, gs, first := blockedWriter(t, inner)
	ownerSnap := persistence.Snapshot{Job: "j", Key: "k", Epoch: owner, State: []byte("owner"), Offsets: record.OffsetsOf(map[string]int64{"s/0": 5})}
	staleSnap := persistence.Snapshot{Job: "j", Key: "k", Epoch: stale, State: []byte("stale"), Offsets: record.OffsetsOf(map[string]int64{"s/0": 9})}
	ownerDone, staleDone := make(chan error, 1), make(chan error, 1)
	w.Submit(ownerSnap, func(err error) { ownerDone <- err })
	w.Submit(staleSnap, func(err error) { staleDone <- err }) // last in the batch
	close(gs.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-ownerDone; err != nil {
		t.Errorf("owner's snapshot: %v, want written", err)
	}
	if err := <-staleDone; len(persistence.Fenced(err)) != 1 {
		t.Errorf("stale activation's snapshot: %v, want a fenced error (it was not written)", err)
	}
	got, err := inner.Load(ctx, "j", "k")
	if err != nil || string(got.State) != "owner" {
		t.Errorf("stored %q, %v; want the owner's", got.State, err)
	}
}

// TestWriterMergesDeltas: a key's whole snapshot and the deltas after it
// that meet in one batch are written as one snapshot that keeps every
// delta's changes (a delta builds on the snapshot before it: keeping only
// the last would lose the parts the earlier ones set).
func TestWriterMergesDeltas(t *testing.T) {
	ctx := context.Background()
	inner := newEmbedded(t)
	w, gs, first := blockedWriter(t, inner)
	part := func(name, v string) persistence.Part { return persistence.Part{Name: name, Value: []byte(v)} }
	snaps := []persistence.Snapshot{
		{Job: "j", Key: "k", State: []byte("b1"), Parts: []persistence.Part{part("a", "1"), part("b", "2")}},
		{Job: "j", Key: "k", State: []byte("b2"), Delta: true, Parts: []persistence.Part{part("c", "3"), {Name: "a"}}},
		{Job: "j", Key: "k", State: []byte("b3"), Delta: true, Parts: []persistence.Part{part("b", "2'")}},
	}
	done := make(chan error, len(snaps))
	for _, sn := range snaps {
		w.Submit(sn, func(err error) { done <- err })
	}
	close(gs.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range snaps {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	got, err := inner.Load(ctx, "j", "k")
	want := stateparts.Pack([]byte("b3"), []persistence.Part{part("b", "2'"), part("c", "3")})
	if err != nil || !bytes.Equal(got.State, want) {
		t.Errorf("stored %q, %v; want %q", got.State, err, want)
	}
}

// nopStore takes every Save and keeps nothing, so a benchmark counts the
// Writer's own work.
type nopStore struct{ persistence.Store }

// savedStore keeps the snapshots of every Save.
type savedStore struct {
	persistence.Store
	mu    sync.Mutex
	snaps []persistence.Snapshot
}

func (s *savedStore) Save(_ context.Context, b []persistence.Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snaps = append(s.snaps, b...)
	return nil
}

// TestWriterSavesOwned: the Writer hands the store what it is given as
// Owned (Submit's contract), the caller's bytes themselves, coalesced or
// not, so an in-memory store keeps them without a copy.
func TestWriterSavesOwned(t *testing.T) {
	st := &savedStore{}
	w := NewWriter(st, WriterOptions{})
	state := []byte("state")
	part := []byte("part")
	done := make(chan error, 1)
	w.Submit(persistence.Snapshot{Job: "j", Key: "k", State: state, Parts: []persistence.Part{{Name: "p", Value: part}}}, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	w.Close(context.Background())
	if len(st.snaps) != 1 {
		t.Fatalf("saved %d snapshots, want 1", len(st.snaps))
	}
	got := st.snaps[0]
	if !got.Owned || &got.State[0] != &state[0] || &got.Parts[0].Value[0] != &part[0] {
		t.Fatalf("saved Owned=%v, state shared=%v, part shared=%v; want the caller's bytes, Owned",
			got.Owned, &got.State[0] == &state[0], &got.Parts[0].Value[0] == &part[0])
	}
}

func (nopStore) Save(context.Context, []persistence.Snapshot) error { return nil }

// BenchmarkWriterSubmit submits snapshots of 1,000 keys, round robin, to a
// Writer over a store that does nothing: the Writer's cost per snapshot
// (queueing, coalescing, callbacks):
//
//	go test -run '^$' -bench BenchmarkWriterSubmit -benchmem ./actors/
func BenchmarkWriterSubmit(b *testing.B) {
	w := NewWriter(nopStore{}, WriterOptions{})
	defer w.Close(context.Background())
	snaps := make([]persistence.Snapshot, 1000)
	for i := range snaps {
		snaps[i] = snap(fmt.Sprintf("key-%d", i), i)
	}
	var wg sync.WaitGroup
	done := func(error) { wg.Done() }
	b.ReportAllocs()
	b.ResetTimer()
	wg.Add(b.N)
	for i := range b.N {
		w.Submit(snaps[i%len(snaps)], done)
	}
	wg.Wait()
}

// deadlineStore records how long each Save's context has left when the
// Save starts.
type deadlineStore struct {
	persistence.Store
	mu   sync.Mutex
	left []time.Duration
	errs []error
}

func (s *deadlineStore) Save(ctx context.Context, b []persistence.Snapshot) error {
	d, ok := ctx.Deadline()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		s.left = append(s.left, -1)
	} else {
		s.left = append(s.left, time.Until(d))
	}
	s.errs = append(s.errs, ctx.Err())
	return nil
}

// TestWriterSaveDeadline: every Save gets a live context with between
// saveTimeout-saveTimeoutReuse and saveTimeout left, though Saves share
// contexts.
func TestWriterSaveDeadline(t *testing.T) {
	ds := &deadlineStore{}
	w := NewWriter(ds, WriterOptions{})
	for i := range 20 {
		done := make(chan error, 1)
		w.Submit(snap(fmt.Sprint(i), i), func(err error) { done <- err })
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	w.Close(context.Background())
	ds.mu.Lock()
	defer ds.mu.Unlock()
	for i, left := range ds.left {
		// A little under the floor for the time between the deadline's
		// reading and this Save's.
		if left < saveTimeout-saveTimeoutReuse-100*time.Millisecond || left > saveTimeout {
			t.Errorf("save %d: %v left, want %v to %v", i, left, saveTimeout-saveTimeoutReuse, saveTimeout)
		}
		if ds.errs[i] != nil {
			t.Errorf("save %d: context already done: %v", i, ds.errs[i])
		}
	}
	if len(ds.left) == 0 {
		t.Fatal("no Save")
	}
}
