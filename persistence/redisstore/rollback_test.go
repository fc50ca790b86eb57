package redisstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"

	"github.com/joinery/joinery/connopts/redisopts"
)

func rawClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestStoreRedisRollbackFromSnapshot reproduces a store rollback: the
// state Redis is snapshotted part-way (SAVE), written on, then killed -9
// and restarted from the older RDB file, as a failover to a lagging
// replica would. The guard detects it (seq back, same incarnation),
// re-founds the incarnation, and the epoch a zombie activation got after
// the snapshot is never issued again, so it cannot write.
func TestStoreRedisRollbackFromSnapshot(t *testing.T) {
	r := testutil.StartRedis(t, "--dbfilename", "dump.rdb")
	ctx := context.Background()
	s := newStore(t, r.Addr)
	var reported []*persistence.RollbackError
	g := persistence.NewGuard(s, func(re *persistence.RollbackError) { reported = append(reported, re) })
	other := persistence.NewGuard(s, nil) // a second node of the fleet
	for _, gd := range []*persistence.Guard{g, other} {
		if err := gd.Check(ctx, "job"); err != nil {
			t.Fatal(err)
		}
	}
	e1, err := s.Acquire(ctx, "job", "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "k", State: []byte("at 10"), Offsets: record.OffsetsOf(map[string]int64{"p/0": 10}), Epoch: e1}}); err != nil {
		t.Fatal(err)
	}
	if err := g.CommitOffsets(ctx, "job", map[string]int64{"p/0": 10}); err != nil {
		t.Fatal(err)
	}
	if err := rawClient(t, r.Addr).Save(ctx).Err(); err != nil { // the snapshot
		t.Fatal(err)
	}
	// After the snapshot: a new activation (the zombie-to-be) and more commits.
	zombie, err := s.Acquire(ctx, "job", "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "k", State: []byte("at 20"), Offsets: record.OffsetsOf(map[string]int64{"p/0": 20}), Epoch: zombie}}); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{15, 20} {
		if err := g.CommitOffsets(ctx, "job", map[string]int64{"p/0": off}); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.CommitOffsets(ctx, "job", map[string]int64{"p/1": 3}); err != nil {
		t.Fatal(err)
	}
	seen, seenOther := g.Seen("job"), other.Seen("job")

	r.Kill()
	r.Start() // loads dump.rdb: the state at the snapshot

	err = g.Check(ctx, "job") // what a node does on reconnect
	var re *persistence.RollbackError
	if !errors.As(err, &re) || re.Seen != seen || re.Found.Incarnation != seen.Incarnation || re.Found.Seq != 1 {
		t.Fatalf("Check after the restore = %v, want a RollbackError from %+v to seq 1", err, seen)
	}
	if len(reported) != 1 {
		t.Fatalf("OnRollback called %d times, want 1", len(reported))
	}
	if got, _ := s.CommittedOffsets(ctx, "job"); !maps.Equal(got, map[string]int64{"p/0": 10}) {
		t.Fatalf("CommittedOffsets after the restore = %v, want the snapshot's {p/0: 10}", got)
	}
	// The other node finds out at its next commit, and commits nothing.
	err = other.CommitOffsets(ctx, "job", map[string]int64{"p/1": 9})
	if !errors.As(err, &re) || re.Seen != seenOther {
		t.Fatalf("other node's commit after the restore = %v, want a RollbackError", err)
	}
	if got, _ := s.CommittedOffsets(ctx, "job"); !maps.Equal(got, map[string]int64{"p/0": 10}) {
		t.Fatalf("CommittedOffsets after a refused commit = %v, want {p/0: 10}", got)
	}
	// The restored epoch key says e1; without the new floor the next
	// Acquire would hand out the zombie's epoch again.
	if e, _ := s.Epoch(ctx, "job", "k"); e != e1 {
		t.Fatalf("restored epoch = %d, want %d", e, e1)
	}
	owner, err := s.Acquire(ctx, "job", "k")
	if err != nil {
		t.Fatal(err)
	}
	if owner <= zombie {
		t.Fatalf("Acquire after the rollback = %d, want more than the zombie's %d", owner, zombie)
	}
	// The zombie's own handle saw the writes the rollback lost: its write
	// generation refuses it before any epoch is compared.
	zs := []persistence.Snapshot{{Job: "job", Key: "k", State: []byte("zombie"), Epoch: zombie}}
	if err := s.Save(ctx, zs); !errors.Is(err, persistence.ErrStoreRolledBack) {
		t.Fatalf("zombie Save through its own handle after the rollback = %v, want ErrStoreRolledBack", err)
	}
	// A zombie whose handle saw nothing of the key's shard (another node's)
	// is fenced: its epoch was never issued again.
	fresh := newStore(t, r.Addr)
	err = fresh.Save(ctx, zs)
	if f := persistence.Fenced(err); len(f) != 1 || f[0].Epoch != zombie || f[0].Holder != owner {
		t.Fatalf("zombie Save after the rollback = %v, want fenced by %d", err, owner)
	}
	if sn, err := fresh.Load(ctx, "job", "k"); err != nil || string(sn.State) != "at 10" {
		t.Fatalf("Load after the zombie's Save = %q, %v; want the snapshot's state", sn.State, err)
	}
}

// TestStoreRedisRollbackEmptyRestart: a Redis restarted without its data
// shows a new incarnation; a node's next commit is refused, and epochs
// issued afterwards lie above the zombie's.
func TestStoreRedisRollbackEmptyRestart(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	s := newStore(t, r.Addr)
	g := persistence.NewGuard(s, nil)
	zombie, err := s.Acquire(ctx, "job", "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.CommitOffsets(ctx, "job", map[string]int64{"p/0": 5}); err != nil {
		t.Fatal(err)
	}
	seen := g.Seen("job")
	r.Kill()
	r.Start() // no AOF, no RDB: empty
	err = g.CommitOffsets(ctx, "job", map[string]int64{"p/0": 6})
	var re *persistence.RollbackError
	if !errors.As(err, &re) || re.Seen != seen || re.Found.Incarnation == seen.Incarnation {
		t.Fatalf("commit to an emptied Redis = %v, want a RollbackError with a new incarnation", err)
	}
	if !strings.Contains(err.Error(), "incarnation changed") {
		t.Errorf("error %q does not say the incarnation changed", err)
	}
	if got, _ := s.CommittedOffsets(ctx, "job"); len(got) != 0 {
		t.Fatalf("CommittedOffsets = %v, want none (the refused commit wrote nothing)", got)
	}
	owner, err := s.Acquire(ctx, "job", "k")
	if err != nil || owner <= zombie {
		t.Fatalf("Acquire on the emptied Redis = %d, %v; want more than %d", owner, err, zombie)
	}
}

// TestStoreRedisMinReplicas runs a master with a real replica
// (redis-server --replicaof): with MinReplicas 1 every Save and commit is on
// the replica when it returns; asking for more replicas than exist, or
// losing the replica, fails the write with ErrNotReplicated within
// ReplicaTimeout.
func TestStoreRedisMinReplicas(t *testing.T) {
	m := testutil.StartRedis(t)
	host, port, _ := strings.Cut(m.Addr, ":")
	rep := testutil.StartRedis(t, "--replicaof", host, port)
	ctx := context.Background()
	rc := rawClient(t, rep.Addr)
	testutil.WaitFor(t, 20*time.Second, func() error {
		info, err := rc.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "master_link_status:up") {
			return errors.New("replica not in sync yet")
		}
		return nil
	})
	open := func(n int, timeout time.Duration) *Store {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		s, err := New(c, Config{Options: redisopts.Options{Addr: m.Addr}, MinReplicas: n, ReplicaTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	s := open(1, 5*time.Second)
	replica := &Store{client: rc, prefix: DefaultKeyPrefix} // reads the replica's copy
	for i := range 20 {
		k := "k" + strings.Repeat("x", i)
		if err := s.Save(ctx, []persistence.Snapshot{{Job: "job", Key: record.Key(k), State: []byte(k), Offsets: record.OffsetsOf(map[string]int64{"p/0": int64(i)})}}); err != nil {
			t.Fatalf("Save %d with MinReplicas 1: %v", i, err)
		}
		if sn, err := replica.Load(ctx, "job", record.Key(k)); err != nil || string(sn.State) != k {
			t.Fatalf("replica right after Save %d: %q, %v", i, sn.State, err)
		}
		if err := s.CommitOffsets(ctx, "job", map[string]int64{"p/0": int64(i)}); err != nil {
			t.Fatalf("CommitOffsets %d with MinReplicas 1: %v", i, err)
		}
		if got, err := replica.CommittedOffsets(ctx, "job"); err != nil || got["p/0"] != int64(i) {
			t.Fatalf("replica's offsets right after commit %d: %v, %v", i, got, err)
		}
	}
	// The NOSCRIPT fallback (a second pipeline, EVAL) waits as well.
	if err := s.client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "after flush", State: []byte("v")}}); err != nil {
		t.Fatalf("Save after SCRIPT FLUSH: %v", err)
	}
	if sn, err := replica.Load(ctx, "job", "after flush"); err != nil || string(sn.State) != "v" {
		t.Fatalf("replica right after the EVAL fallback: %q, %v", sn.State, err)
	}

	two := open(2, 200*time.Millisecond)
	start := time.Now()
	err := two.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "k2", State: []byte("v")}})
	if !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("Save with MinReplicas 2 and one replica = %v, want ErrNotReplicated", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("ErrNotReplicated after %s, before the 200ms timeout", d)
	}
	if err := two.CommitOffsets(ctx, "job", map[string]int64{"p/9": 1}); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("CommitOffsets with MinReplicas 2 = %v, want ErrNotReplicated", err)
	}

	rep.Kill()
	short := open(1, 200*time.Millisecond)
	if err := short.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "k3", State: []byte("v")}}); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("Save with the replica down = %v, want ErrNotReplicated", err)
	}
	// Without MinReplicas the same write passes.
	if err := open(0, 0).Save(ctx, []persistence.Snapshot{{Job: "job", Key: "k3", State: []byte("v")}}); err != nil {
		t.Fatalf("Save without MinReplicas: %v", err)
	}
}

func TestConfigMinReplicas(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Options: redisopts.Options{Addr: "r:1"}, MinReplicas: 1, ReplicaTimeout: time.Second}, ""},
		{Config{Options: redisopts.Options{Addr: "r:1"}, MinReplicas: -1}, "MinReplicas -1 is negative"},
		{Config{Options: redisopts.Options{Addr: "r:1"}, ReplicaTimeout: -time.Second}, "ReplicaTimeout -1s is negative"},
		{Config{Cluster: []string{"r:1"}, MinReplicas: 1}, "not supported with Config.Cluster"},
	} {
		err := c.cfg.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Validate(%v) = %v, want %q", c.cfg, err, c.want)
		}
	}
}

// TestStoreRedisGenerations: several handles (nodes) writing the same
// shard, concurrently, never refuse each other (the generation only grows,
// each checks it against what it saw); the server restored from an older
// dump refuses each of them at its first write and read, wherever the key,
// and writes nothing; a new handle (a restarted node) writes.
func TestStoreRedisGenerations(t *testing.T) {
	r := testutil.StartRedis(t, "--dbfilename", "dump.rdb")
	ctx := context.Background()
	nodes := []*Store{newStore(t, r.Addr), newStore(t, r.Addr), newStore(t, r.Addr)}
	var wg sync.WaitGroup
	errs := make(chan error, len(nodes))
	for i, s := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				k := record.Key(fmt.Sprint("k", j%7)) // keys every node writes
				if err := s.Save(ctx, []persistence.Snapshot{{Job: "job", Key: k, State: []byte(fmt.Sprint(i, j)), Offsets: record.OffsetsOf(map[string]int64{"p/0": int64(j)})}}); err != nil {
					errs <- fmt.Errorf("node %d save %d: %w", i, j, err)
					return
				}
				if _, err := s.Load(ctx, "job", k); err != nil {
					errs <- fmt.Errorf("node %d load %d: %w", i, j, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := rawClient(t, r.Addr).Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for i, s := range nodes {
		if err := saveOne(ctx, s, record.Key(fmt.Sprint("after", i)), "lost"); err != nil {
			t.Fatal(err)
		}
	}
	r.Kill()
	r.Start()
	for i, s := range nodes {
		// A key never written before, in whatever group: the job's shard
		// lost writes this node made.
		err := saveOne(ctx, s, record.Key(fmt.Sprint("fresh", i)), "x")
		var se *persistence.StaleStoreError
		if !errors.As(err, &se) || se.Job != "job" || se.Found >= se.Seen {
			t.Fatalf("node %d: first Save after the restore = %v, want a StaleStoreError", i, err)
		}
		if _, err := s.Load(ctx, "job", "k0"); !errors.Is(err, persistence.ErrStoreRolledBack) {
			t.Fatalf("node %d: Load after the restore = %v, want ErrStoreRolledBack", i, err)
		}
	}
	restarted := newStore(t, r.Addr)
	for i := range nodes {
		k := record.Key(fmt.Sprint("fresh", i))
		if _, err := restarted.Load(ctx, "job", k); !errors.Is(err, persistence.ErrNotFound) {
			t.Fatalf("Load(%s) = %v: a refused write landed", k, err)
		}
		if _, err := restarted.Load(ctx, "job", record.Key(fmt.Sprint("after", i))); !errors.Is(err, persistence.ErrNotFound) {
			t.Fatalf("Load(after%d) = %v: the restore kept a write made after the dump", i, err)
		}
	}
	if err := saveOne(ctx, restarted, "fresh0", "x"); err != nil {
		t.Fatalf("Save through a new handle after the restore: %v", err)
	}
	mustLoad(t, restarted, "fresh0", "x")
}

// TestStoreClusterGenerations: on a cluster each slot group has its own
// generation: after one master is restored from an older dump, a node's
// writes to that master's groups it wrote since are refused, and its
// writes to the other masters' groups pass (they lost nothing).
func TestStoreClusterGenerations(t *testing.T) {
	c := testutil.StartRedisCluster(t, 3)
	ctx := context.Background()
	s := newClusterStore(t, c, "gen")
	l := layoutOf("gen", "job")
	// One key per group, each written once before and once after the dump.
	keyOf := map[int]record.Key{}
	for i := 0; len(keyOf) < groups; i++ {
		k := record.Key(fmt.Sprint("k", i))
		if _, ok := keyOf[groupOf(string(k))]; !ok {
			keyOf[groupOf(string(k))] = k
		}
	}
	for round := range 2 {
		if round == 1 {
			c.Save()
		}
		for g := range groups {
			if err := saveOne(ctx, s, keyOf[g], fmt.Sprint("round", round)); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := c.Masters[0]
	m.Kill()
	m.Start()
	c.WaitOK()
	refused, passed := 0, 0
	for g := range groups {
		slot := int(crc16(l.prefixes[g][len("gen:{"):len(l.prefixes[g])-2]) % clusterSlots)
		onRestored := c.Owner(slot) == 0
		err := saveOne(ctx, s, keyOf[g], "round2")
		switch {
		case onRestored && errors.Is(err, persistence.ErrStoreRolledBack):
			refused++
		case !onRestored && err == nil:
			passed++
		default:
			t.Fatalf("group %d (on the restored master: %v): Save = %v", g, onRestored, err)
		}
	}
	if refused == 0 || passed == 0 {
		t.Fatalf("%d groups refused, %d passed; want both", refused, passed)
	}
	t.Logf("after one master's restore: %d groups refused, %d passed", refused, passed)
}
