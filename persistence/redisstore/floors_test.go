package redisstore

import (
	"context"
	"fmt"
	"maps"
	"math"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/record"
)

// TestStoreClusterRecoveryOffsets: one master of a cluster goes back to an
// older dump (what a failover to a lagging replica does) while the master
// that holds the partition's committed offset keeps it. The committed
// offset is then ahead of the state the restored master kept; the
// recovery offset is the replay floor that master's groups kept, copied
// after the writes they hold. Without the floors a restarted node resumed
// from the committed offset and the restored master's keys never applied
// what they lost (TestChaosClusterFailoverLaggingReplica).
func TestStoreClusterRecoveryOffsets(t *testing.T) {
	c := testutil.StartRedisCluster(t, 3)
	ctx := context.Background()
	s := newClusterStore(t, c, "rec")
	l := layoutOf("rec", "job")
	ownerOf := func(g int) int {
		return c.Owner(int(crc16(l.prefixes[g][len("rec:{"):len(l.prefixes[g])-2]) % clusterSlots))
	}
	keyOf := map[int]record.Key{}
	for i := 0; len(keyOf) < groups; i++ {
		k := record.Key(fmt.Sprint("k", i))
		if _, ok := keyOf[groupOf(string(k))]; !ok {
			keyOf[groupOf(string(k))] = k
		}
	}
	writeAll := func(state string) {
		t.Helper()
		for g := range groups {
			if err := saveOne(ctx, s, keyOf[g], state); err != nil {
				t.Fatal(err)
			}
		}
	}
	commit := func(off int64) {
		t.Helper()
		if err := s.CommitOffsets(ctx, "job", map[string]int64{"p/0": off}); err != nil {
			t.Fatal(err)
		}
		s.floorsCopied("job")
	}
	check := func(what string, committed, recovery int64) {
		t.Helper()
		co, err := s.CommittedOffsets(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		ro, err := s.RecoveryOffsets(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(co, map[string]int64{"p/0": committed}) || !maps.Equal(ro, map[string]int64{"p/0": recovery}) {
			t.Fatalf("%s: committed %v, recovery %v; want p/0 at %d and %d", what, co, ro, committed, recovery)
		}
	}

	// KeptFloor is what RecoveryOffsets answers while no master went
	// back: a repartition stream trimmed no further keeps the entries its
	// next reader starts after.
	kept := func(what string, want int64) {
		t.Helper()
		if got, ok := s.KeptFloor("job", "p/0"); !ok || got != want {
			t.Fatalf("%s: KeptFloor %d, %v; want %d", what, got, ok, want)
		}
	}
	if got, ok := s.KeptFloor("job", "p/0"); ok {
		t.Fatalf("KeptFloor before any commit: %d, want none", got)
	}
	writeAll("a")
	commit(10) // a Store's first commit copies its offsets into every group
	check("after the first commit", 10, 10)
	kept("after the first commit", 10)
	c.Save()
	writeAll("bb")
	commit(20) // within floorEvery of the copy: no new one
	check("a commit within floorEvery", 20, 10)
	kept("a commit within floorEvery", 10)
	time.Sleep(floorEvery)
	writeAll("ccc")
	commit(30)
	check("a commit after floorEvery", 30, 30)
	kept("a commit after floorEvery", 30)

	// Restore a master that does not hold p/0's committed offset.
	restored := (ownerOf(groupOf("p/0")) + 1) % len(c.Masters)
	m := c.Masters[restored]
	m.Kill()
	m.Start()
	c.WaitOK()
	check("one master restored from the dump", 30, 10)
	// Its keys are back at "a", the others' at "ccc": what a node restarted
	// (a new Store: this one refuses the restored groups) from the recovery
	// offset re-applies, and skips.
	s = newClusterStore(t, c, "rec")
	for g := range groups {
		want := "ccc"
		if ownerOf(g) == restored {
			want = "a"
		}
		mustLoad(t, s, keyOf[g], want)
	}
}

// TestStoreKeptFloorOneServer: on one server RecoveryOffsets is
// CommittedOffsets, so KeptFloor sets no bound.
func TestStoreKeptFloorOneServer(t *testing.T) {
	s := newStore(t, testutil.StartRedis(t).Addr)
	if err := s.CommitOffsets(context.Background(), "job", map[string]int64{"p/0": 10}); err != nil {
		t.Fatal(err)
	}
	if got, ok := s.KeptFloor("job", "p/0"); !ok || got != math.MaxInt64 {
		t.Errorf("KeptFloor %d, %v; want math.MaxInt64, true", got, ok)
	}
}
