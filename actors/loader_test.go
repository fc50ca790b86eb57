package actors

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/persistence/redisstore"
	"github.com/joinery/joinery/record"
)

// batchStore is an embedded store whose LoadMany records each call's keys
// and, while gate is not nil, waits for it to close.
type batchStore struct {
	persistence.Store
	mu    sync.Mutex
	calls [][]record.Key
	gate  chan struct{} // nil: answer at once
}

func (s *batchStore) LoadMany(ctx context.Context, job string, keys []record.Key) ([]persistence.Snapshot, error) {
	s.mu.Lock()
	s.calls = append(s.calls, keys)
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return persistence.LoadMany(ctx, s.Store, job, keys)
}

func (s *batchStore) callSizes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for _, c := range s.calls {
		out = append(out, len(c))
	}
	return out
}

// TestLoaderTrickle: loads one at a time each go out at once, alone.
func TestLoaderTrickle(t *testing.T) {
	ctx := context.Background()
	st := &batchStore{Store: newEmbedded(t)}
	if err := st.Save(ctx, []persistence.Snapshot{{Job: "j", Key: "k1", State: []byte("s1")}}); err != nil {
		t.Fatal(err)
	}
	l := newLoader(st)
	for range 3 {
		sn, err := l.Load(ctx, "j", "k1")
		if err != nil || string(sn.State) != "s1" || sn.Key != "k1" {
			t.Fatalf("Load = %+v, %v", sn, err)
		}
		if _, err := l.Load(ctx, "j", "none"); !errors.Is(err, persistence.ErrNotFound) {
			t.Fatalf("Load of a missing key = %v, want ErrNotFound", err)
		}
	}
	if got := st.callSizes(); len(got) != 6 || got[0] != 1 || got[5] != 1 {
		t.Fatalf("LoadMany calls of sizes %v, want six of one key", got)
	}
}

// TestLoaderBurst: loads that arrive while the round trips in flight are
// busy share the next one, and each gets its own key's snapshot.
func TestLoaderBurst(t *testing.T) {
	ctx := context.Background()
	st := &batchStore{Store: newEmbedded(t), gate: make(chan struct{})}
	const n = 100
	var batch []persistence.Snapshot
	for i := range n {
		batch = append(batch, persistence.Snapshot{Job: "j", Key: record.Key(fmt.Sprint(i)), State: []byte(fmt.Sprint("s", i))})
	}
	if err := st.Save(ctx, batch); err != nil {
		t.Fatal(err)
	}
	l := newLoader(st)
	var wg sync.WaitGroup
	errs := make(chan error, n+2)
	load := func(i int) {
		defer wg.Done()
		sn, err := l.Load(ctx, "j", record.Key(fmt.Sprint(i)))
		if err == nil && string(sn.State) != fmt.Sprint("s", i) {
			err = fmt.Errorf("key %d loaded %q", i, sn.State)
		}
		if err != nil {
			errs <- err
		}
	}
	// Two loads take the two flights, and wait at the gate.
	for i := range 2 {
		wg.Add(1)
		go load(i)
		for len(st.callSizes()) < i+1 {
			runtimeGosched()
		}
	}
	wg.Add(n - 2)
	for i := 2; i < n; i++ {
		go load(i)
	}
	for {
		l.mu.Lock()
		queued := len(l.queue)
		l.mu.Unlock()
		if queued == n-2 {
			break
		}
		runtimeGosched()
	}
	close(st.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := st.callSizes()
	if len(got) > 4 || got[0] != 1 || got[1] != 1 {
		t.Fatalf("LoadMany calls of sizes %v: want the first two alone and the other %d loads in one or two", got, n-2)
	}
}

func runtimeGosched() { runtime.Gosched() }

// TestLoaderActivate: Activate takes the key (its epoch is the store's
// now, above any before) and reads it, also for a key without a snapshot.
func TestLoaderActivate(t *testing.T) {
	ctx := context.Background()
	st := &batchStore{Store: newEmbedded(t)}
	before, err := st.Acquire(ctx, "j", "k1")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Save(ctx, []persistence.Snapshot{{Job: "j", Key: "k1", State: []byte("s1"), Epoch: before}}); err != nil {
		t.Fatal(err)
	}
	l := newLoader(st)
	e, sn, err := l.Activate(ctx, "j", "k1")
	if err != nil || string(sn.State) != "s1" || e <= before {
		t.Fatalf("Activate = %d, %+v, %v; want an epoch above %d and the snapshot", e, sn, err, before)
	}
	e2, _, err := l.Activate(ctx, "j", "none")
	if !errors.Is(err, persistence.ErrNotFound) || e2 < 1 {
		t.Fatalf("Activate of a missing key = %d, %v; want an epoch and ErrNotFound", e2, err)
	}
	for k, want := range map[record.Key]int64{"k1": e, "none": e2} {
		if got, err := st.Epoch(ctx, "j", k); err != nil || got != want {
			t.Fatalf("Epoch(%s) = %d, %v; want %d", k, got, err, want)
		}
	}
}

// BenchmarkActivations activates 256 keys at once (a sender's batch
// reaching new keys), each from its own goroutine as key actors do, on a
// local redis-server: each taking its key and reading it alone (Acquire
// then Load, as activations did), or through the loader (their Acquires
// and loads share round trips); and, "trickle", one at a time:
//
//	go test -run '^$' -bench BenchmarkActivations ./actors/
func BenchmarkActivations(b *testing.B) {
	ctx := context.Background()
	st, err := redisstore.New(ctx, redisstore.Config{Options: redisopts.Options{Addr: testutil.StartRedis(b).Addr}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	const n = 256
	keys := make([]record.Key, n)
	var batch []persistence.Snapshot
	for i := range keys {
		keys[i] = record.Key(fmt.Sprint("user-", i))
		batch = append(batch, persistence.Snapshot{Job: "j", Key: keys[i], State: []byte("state")})
	}
	if err := st.Save(ctx, batch); err != nil {
		b.Fatal(err)
	}
	alone := func(k record.Key) error {
		if _, err := st.Acquire(ctx, "j", k); err != nil {
			return err
		}
		_, err := st.Load(ctx, "j", k)
		return err
	}
	l := newLoader(st)
	shared := func(k record.Key) error { _, _, err := l.Activate(ctx, "j", k); return err }
	for _, v := range []struct {
		name     string
		activate func(record.Key) error
	}{{"alone", alone}, {"loader", shared}} {
		b.Run(v.name, func(b *testing.B) {
			for range b.N {
				var wg sync.WaitGroup
				for _, k := range keys {
					wg.Go(func() {
						if err := v.activate(k); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "activations/s")
		})
		// At a trickle: one activation at a time, whose latency the
		// loader must not add to.
		b.Run(v.name+"/trickle", func(b *testing.B) {
			for i := range b.N {
				if err := v.activate(keys[i%n]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
