package redisstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/persistence/storetest"
	"github.com/joinery/joinery/record"

	"github.com/joinery/joinery/connopts/redisopts"
)

// newClusterStore opens a store on cluster c with key prefix prefix.
func newClusterStore(t testing.TB, c *testutil.RedisCluster, prefix string) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := New(ctx, Config{Cluster: c.Addrs(), KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestStoreClusterClient checks the cluster store's client: the store's
// cluster settings (redirections, slot map reloads), context deadlines on
// sockets, and OnRedisError called for a failed call (an unknown command)
// but not for a nil reply.
func TestStoreClusterClient(t *testing.T) {
	c := testutil.StartRedisCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var failed atomic.Int64
	s, err := New(ctx, Config{Options: redisopts.Options{OnRedisError: func() { failed.Add(1) }}, Cluster: c.Addrs(), KeyPrefix: "client"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := s.client.(*redis.ClusterClient).Options()
	if o.MaxRedirects != clusterMaxRedirects || o.ClusterStateReloadInterval != clusterStateReload || !o.ContextTimeoutEnabled {
		t.Errorf("cluster client options: MaxRedirects %d, ClusterStateReloadInterval %s, ContextTimeoutEnabled %t; want %d, %s, true",
			o.MaxRedirects, o.ClusterStateReloadInterval, o.ContextTimeoutEnabled, clusterMaxRedirects, clusterStateReload)
	}
	_ = s.client.Get(ctx, "client:missing").Err()
	if n := failed.Load(); n != 0 {
		t.Fatalf("a nil reply counted %d failed calls, want 0", n)
	}
	_ = s.client.Do(ctx, "NOSUCHCOMMAND", "k").Err()
	if n := failed.Load(); n != 1 {
		t.Fatalf("an unknown command counted %d failed calls, want 1", n)
	}
}

// TestStoreClusterConformance runs the store suite against a real
// three-master Redis Cluster. The subtests share the cluster; each gets an
// empty store through a key prefix of its own. The rollback subtests SAVE
// every master and later kill -9 and restart them all from those dumps.
func TestStoreClusterConformance(t *testing.T) {
	c := testutil.StartRedisCluster(t, 3)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) persistence.Store {
		return newClusterStore(t, c, fmt.Sprint("conf", n.Add(1)))
	}, storetest.WithReopen(func(t *testing.T, old persistence.Store) persistence.Store {
		prefix := old.(*Store).prefix
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}
		return newClusterStore(t, c, prefix)
	}), storetest.WithRollback(func(t *testing.T, s persistence.Store) func() {
		c.Save()
		return c.Restart // every master back to its dump
	}))
}

func TestStoreClusterWatermarks(t *testing.T) {
	c := testutil.StartRedisCluster(t, 3)
	var n atomic.Int64
	storetest.RunWatermarks(t, func(t *testing.T) persistence.WatermarkStore {
		return newClusterStore(t, c, fmt.Sprint("wm", n.Add(1)))
	})
}

// TestStoreClusterSpread saves 1000 keys of one job and 200 partitions'
// offsets: no master holds more than 40% of the key hashes, or of the
// offsets hashes, and every slot group is on the master its window says.
func TestStoreClusterSpread(t *testing.T) {
	c := testutil.StartRedisCluster(t, 3)
	s := newClusterStore(t, c, "spread")
	ctx := context.Background()
	const keys = 1000
	var batch []persistence.Snapshot
	offsets := map[string]int64{}
	for i := range keys {
		batch = append(batch, persistence.Snapshot{Job: "users-domains", Key: record.Key(fmt.Sprint(i)), State: []byte("s"),
			HasTimer: true, NextTimer: int64(i)})
	}
	for p := range 200 {
		offsets[fmt.Sprintf("users/%d", p)] = int64(p)
	}
	if err := s.Save(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := s.CommitOffsets(ctx, "users-domains", offsets); err != nil {
		t.Fatal(err)
	}
	hashes := "{" + namesOf(t, s, "users-domains").id + "*"
	for _, kind := range []string{"key hash", "offsets", "timers"} {
		pattern := "spread:*}:" + kind
		if kind == "key hash" {
			pattern = hashes
		}
		counts := c.CountKeys(pattern)
		total := 0
		for _, n := range counts {
			total += n
		}
		t.Logf("%-8s keys per master: %v (of %d)", kind, counts, total)
		if kind == "key hash" && total != keys {
			t.Fatalf("%d key hashes in the cluster, want %d", total, keys)
		}
		for i, n := range counts {
			if float64(n) > 0.4*float64(total) {
				t.Errorf("master %d holds %d of %d %s keys, more than 40%%", i, n, total, kind)
			}
		}
	}
	// What was written reads back through the groups.
	if got, err := s.CommittedOffsets(ctx, "users-domains"); err != nil || !maps.Equal(got, offsets) {
		t.Fatalf("CommittedOffsets = %d entries, %v; want the %d committed", len(got), err, len(offsets))
	}
	due, err := s.DueTimers(ctx, "users-domains", 499, 10000)
	if err != nil || len(due) != 500 || due[0] != (persistence.TimerDue{Key: "0", At: 0}) || due[499].At != 499 {
		t.Fatalf("DueTimers(499) = %d entries, %v", len(due), err)
	}
	if ks, err := s.Keys(ctx, "users-domains"); err != nil || len(ks) != keys {
		t.Fatalf("Keys = %d keys, %v", len(ks), err)
	}
}

// TestStoreClusterDueTimersBacklog: with far more due timers than the
// limit, spread unevenly over the groups, DueTimers still returns exactly
// the first limit in order (the refetch of groups that may hold more).
func TestStoreClusterDueTimersBacklog(t *testing.T) {
	c := testutil.StartRedisCluster(t, 3)
	s := newClusterStore(t, c, "backlog")
	ctx := context.Background()
	var all []persistence.TimerDue
	var batch []persistence.Snapshot
	for i := range 3000 {
		k := record.Key(fmt.Sprint("k", i))
		at := int64(i % 7)
		if groupOf(string(k)) == 5 {
			at = -1 // one group holds all the earliest timers
		}
		all = append(all, persistence.TimerDue{Key: k, At: at})
		batch = append(batch, persistence.Snapshot{Job: "j", Key: k, State: []byte("s"), HasTimer: true, NextTimer: at})
	}
	if err := s.Save(ctx, batch); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, compareDue)
	for _, tc := range []struct {
		upTo  int64
		limit int
	}{{-1, 5}, {-1, 100}, {0, 20}, {3, 1000}, {6, 2999}, {6, 3000}, {math.MaxInt64, 10000}, {2, 1}} {
		got, err := s.DueTimers(ctx, "j", tc.upTo, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var want []persistence.TimerDue
		for _, d := range all {
			if d.At <= tc.upTo && len(want) < tc.limit {
				want = append(want, d)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("DueTimers(%d, %d) = %d entries (first %v), want %d (first %v)", tc.upTo, tc.limit, len(got), got[:min(3, len(got))], len(want), want[:min(3, len(want))])
		}
	}
}

// TestStoreClusterSlotMigration moves a slot that holds test keys from one
// master to another while writers keep saving (fenced, with timers) and
// committing offsets: every Save either succeeds or returns an error
// (go-redis follows ASK and MOVED and retries TRYAGAIN; a Save that still
// fails is retried, as actors.Writer does), and afterwards every key, the
// timer index and the committed offsets hold exactly the last successful
// writes.
func TestStoreClusterSlotMigration(t *testing.T) {
	c := testutil.StartRedisCluster(t, 3)
	s := newClusterStore(t, c, "mig")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const job, writers = "mig", 4
	// Half of each writer's keys are in the group whose slot moves.
	const moving = 17
	slot := int(crc16(groupTag(job, moving)) % clusterSlots)
	var inGroup, elsewhere []record.Key
	for i := 0; len(inGroup) < 4*writers || len(elsewhere) < 4*writers; i++ {
		k := record.Key(fmt.Sprint("key-", i))
		if groupOf(string(k)) == moving {
			inGroup = append(inGroup, k)
		} else {
			elsewhere = append(elsewhere, k)
		}
	}
	// Extra keys in the slot so that the migration takes many batches.
	var filler []persistence.Snapshot
	for i := 0; len(filler) < 150; i++ {
		k := record.Key(fmt.Sprint("filler-", i))
		if groupOf(string(k)) == moving {
			filler = append(filler, persistence.Snapshot{Job: job, Key: k, State: []byte("filler")})
		}
	}
	if err := s.Save(ctx, filler); err != nil {
		t.Fatal(err)
	}

	type last struct {
		state string
		timer int64
	}
	var (
		mu       sync.Mutex
		final    = map[record.Key]last{}
		offsets  = map[string]int64{}
		failures atomic.Int64
		saves    atomic.Int64
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	retry := func(what string, f func() error) error {
		for {
			err := f()
			if err == nil || errors.Is(err, persistence.ErrFenced) || ctx.Err() != nil {
				return err
			}
			failures.Add(1)
			t.Logf("%s failed (retrying): %v", what, err)
			time.Sleep(10 * time.Millisecond)
		}
	}
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			mine := append(slices.Clone(inGroup[4*w:4*w+4]), elsewhere[4*w:4*w+4]...)
			epochs := map[record.Key]int64{}
			for _, k := range mine {
				e, err := s.Acquire(ctx, job, k)
				if err != nil {
					errs <- err
					return
				}
				epochs[k] = e
			}
			for round := 0; ; round++ {
				select {
				case <-stop:
					if round > 0 {
						errs <- nil
						return
					}
				default:
				}
				var batch []persistence.Snapshot
				for i, k := range mine {
					batch = append(batch, persistence.Snapshot{Job: job, Key: k, Epoch: epochs[k],
						State: []byte(fmt.Sprintf("w%d r%d k%d", w, round, i)), Offsets: record.OffsetsOf(map[string]int64{"p/0": int64(round)}),
						HasTimer: round%3 != 0, NextTimer: int64(round*10 + i)})
				}
				if err := retry("save", func() error { saves.Add(1); return s.Save(ctx, batch) }); err != nil {
					errs <- fmt.Errorf("writer %d round %d: Save: %w", w, round, err)
					return
				}
				part := fmt.Sprint("src/", w)
				if err := retry("commit", func() error {
					return s.CommitOffsets(ctx, job, map[string]int64{part: int64(round)})
				}); err != nil {
					errs <- fmt.Errorf("writer %d round %d: CommitOffsets: %w", w, round, err)
					return
				}
				mu.Lock()
				for _, sn := range batch {
					final[sn.Key] = last{string(sn.State), map[bool]int64{true: sn.NextTimer, false: math.MinInt64}[sn.HasTimer]}
				}
				offsets[part] = int64(round)
				mu.Unlock()
			}
		})
	}
	time.Sleep(100 * time.Millisecond) // writers under way
	from := c.Owner(slot)
	to := (from + 1) % len(c.Masters)
	var during atomic.Int64
	moved := c.MigrateSlot(slot, to, 5, func(int) {
		during.Store(saves.Load())
		time.Sleep(15 * time.Millisecond) // writes meet the half-moved slot
	})
	time.Sleep(100 * time.Millisecond) // and the moved one
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Owner(slot); got != to {
		t.Fatalf("slot %d is on master %d after the migration, want %d", slot, got, to)
	}
	t.Logf("slot %d moved from master %d to %d: %d keys; %d Save calls, %d calls failed and were retried",
		slot, from, to, moved, saves.Load(), failures.Load())
	if moved < len(filler) {
		t.Fatalf("moved %d keys, want at least the %d filler keys", moved, len(filler))
	}
	if during.Load() == 0 {
		t.Fatal("no Save ran during the migration")
	}
	// The masters answered redirections and retries, which go-redis
	// followed: the writes did meet the moving slot.
	redirects := map[string]int{}
	for _, m := range c.Masters {
		cl := redis.NewClient(&redis.Options{Addr: m.Addr})
		info, err := cl.Info(ctx, "errorstats").Result()
		_ = cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{"ASK", "TRYAGAIN", "MOVED"} {
			redirects[kind] += errorCount(info, kind)
		}
	}
	t.Logf("masters answered %v", redirects)
	if redirects["ASK"]+redirects["TRYAGAIN"] == 0 {
		t.Fatalf("no ASK or TRYAGAIN during the migration (%v): the writes did not meet the half-moved slot", redirects)
	}

	// A fresh client learns the new slot map; both see the final state.
	fresh := newClusterStore(t, c, "mig")
	for _, st := range []*Store{s, fresh} {
		var wantDue []persistence.TimerDue
		for k, l := range final {
			got, err := st.Load(ctx, job, k)
			if err != nil || string(got.State) != l.state {
				t.Fatalf("Load(%s) = %q, %v; want %q", k, got.State, err, l.state)
			}
			if l.timer != math.MinInt64 {
				wantDue = append(wantDue, persistence.TimerDue{Key: k, At: l.timer})
			}
		}
		slices.SortFunc(wantDue, compareDue)
		due, err := st.DueTimers(ctx, job, math.MaxInt64, 1000)
		if err != nil || !slices.Equal(due, wantDue) {
			t.Fatalf("DueTimers = %v, %v; want %v", due, err, wantDue)
		}
		got, err := st.CommittedOffsets(ctx, job)
		if err != nil || !maps.Equal(got, offsets) {
			t.Fatalf("CommittedOffsets = %v, %v; want %v", got, err, offsets)
		}
		ks, err := st.Keys(ctx, job)
		if err != nil || len(ks) != len(final)+len(filler) {
			t.Fatalf("Keys = %d keys, %v; want %d", len(ks), err, len(final)+len(filler))
		}
		for _, f := range filler {
			if got, err := st.Load(ctx, job, f.Key); err != nil || string(got.State) != "filler" {
				t.Fatalf("Load(%s) after the migration = %q, %v", f.Key, got.State, err)
			}
		}
	}
	// Fencing still holds on the moved slot: a new owner's Acquire fences
	// the old epoch.
	k := inGroup[0]
	old, err := s.Epoch(ctx, job, k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Acquire(ctx, job, k); err != nil {
		t.Fatal(err)
	}
	err = s.Save(ctx, []persistence.Snapshot{{Job: job, Key: k, Epoch: old, State: []byte("stale")}})
	if fe := persistence.Fenced(err); len(fe) != 1 || fe[0].Key != k {
		t.Fatalf("stale Save after the migration = %v, want %s fenced", err, k)
	}
}

// errorCount reads count=N of errorstat_<kind> from INFO errorstats.
func errorCount(info, kind string) int {
	for line := range strings.SplitSeq(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "errorstat_"+kind+":count="); ok {
			var n int
			fmt.Sscanf(rest, "%d", &n)
			return n
		}
	}
	return 0
}

// TestStoreClusterConfig: a cluster store refuses a DB, and one of its
// nodes down at start is reported by New.
func TestStoreClusterConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Options: redisopts.Options{DB: 1}, Cluster: []string{"127.0.0.1:1"}}, "only database 0"},
		{Config{Options: redisopts.Options{Addr: "127.0.0.1:2"}, Cluster: []string{"127.0.0.1:1"}}, "exclude each other"},
		{Config{Cluster: []string{"nohost"}}, "Config.Cluster[0]"},
		{Config{}, "Config.Addr (or Config.Cluster) is required"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%v) = %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
	if got := (Config{Options: redisopts.Options{Password: "secret"}, Cluster: []string{"a:1", "b:2"}}).String(); strings.Contains(got, "secret") || !strings.Contains(got, `"a:1" "b:2"`) {
		t.Errorf("String() = %s", got)
	}
	c := testutil.StartRedisCluster(t, 3)
	c.Masters[2].Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := New(ctx, Config{Cluster: c.Addrs()[:1]}); err == nil {
		t.Fatal("New with a master down succeeded")
	}
}
