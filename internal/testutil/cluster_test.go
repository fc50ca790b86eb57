package testutil

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRedisCluster starts a three-master cluster: each master owns a third
// of the slots, a cluster client writes keys that land on every master,
// and MigrateSlot moves a slot with its keys to another master, after
// which the client (following MOVED) still reads them.
func TestRedisCluster(t *testing.T) {
	c := StartRedisCluster(t, 3)
	owners := map[int]int{}
	for slot := 0; slot < 16384; slot += 128 {
		owners[c.Owner(slot)]++
	}
	if len(owners) != 3 || owners[0] < 40 || owners[1] < 40 || owners[2] < 40 {
		t.Fatalf("slot owners (every 128th slot) = %v, want three near-equal shares", owners)
	}
	ctx := context.Background()
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()[:1]})
	defer cl.Close()
	for i := range 300 {
		if err := cl.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	counts := c.CountKeys("k*")
	if counts[0]+counts[1]+counts[2] != 300 || counts[0] == 0 || counts[1] == 0 || counts[2] == 0 {
		t.Fatalf("keys per master = %v, want 300 spread over all three", counts)
	}
	// Keys with one hash tag share a slot; move it.
	for i := range 20 {
		if err := cl.Set(ctx, fmt.Sprintf("{tag}:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	slot, err := cl.ClusterKeySlot(ctx, "{tag}:0").Result()
	if err != nil {
		t.Fatal(err)
	}
	from := c.Owner(int(slot))
	to := (from + 2) % 3
	batches := 0
	moved := c.MigrateSlot(int(slot), to, 3, func(int) { batches++ })
	if moved != 20 || batches != 7 {
		t.Fatalf("MigrateSlot moved %d keys in %d batches, want 20 in 7", moved, batches)
	}
	if got := c.Owner(int(slot)); got != to {
		t.Fatalf("slot %d on master %d after the migration, want %d", slot, got, to)
	}
	if n := c.CountKeys("{tag}:*"); n[from] != 0 || n[to] != 20 {
		t.Fatalf("{tag} keys per master after the migration = %v", n)
	}
	for i := range 20 {
		if v, err := cl.Get(ctx, fmt.Sprintf("{tag}:%d", i)).Int(); err != nil || v != i {
			t.Fatalf("GET {tag}:%d after the migration = %d, %v", i, v, err)
		}
	}
}

// TestRedisClusterReplicas starts three masters with a replica each, every
// replica paired with its master; after master 0 is killed, Failover
// promotes its replica, which serves its keys, and Masters lists it.
func TestRedisClusterReplicas(t *testing.T) {
	c := StartRedisClusterReplicas(t, 3)
	ctx := context.Background()
	for i, r := range c.Replicas {
		cl := node(r.Addr)
		info := cl.Info(ctx, "replication").Val()
		_ = cl.Close()
		if host, port := infoField(info, "master_host"), infoField(info, "master_port"); host+":"+port != c.Masters[i].Addr {
			t.Fatalf("replica %d (%s) follows %s:%s, want %s", i, r.Addr, host, port, c.Masters[i].Addr)
		}
	}
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ClusterStateReloadInterval: 100 * time.Millisecond})
	defer cl.Close()
	for i := range 300 {
		if err := cl.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	old := c.Masters[0]
	mc, rc := node(old.Addr), node(c.Replicas[0].Addr)
	WaitFor(t, 10*time.Second, func() error {
		mo := infoField(mc.Info(ctx, "replication").Val(), "master_repl_offset")
		ro := infoField(rc.Info(ctx, "replication").Val(), "master_repl_offset")
		if mo != ro {
			return fmt.Errorf("replica at %s of %s", ro, mo)
		}
		return nil
	})
	_, _ = mc.Close(), rc.Close()
	old.Kill()
	promoted := c.Replicas[0]
	c.Failover(0)
	if c.Masters[0] != promoted || c.Replicas[0] != old {
		t.Fatalf("after Failover(0): master 0 is %s, replica 0 %s; want %s and %s", c.Masters[0].Addr, c.Replicas[0].Addr, promoted.Addr, old.Addr)
	}
	WaitFor(t, 10*time.Second, func() error {
		for i := range 300 {
			if v, err := cl.Get(ctx, fmt.Sprint("k", i)).Int(); err != nil || v != i {
				return fmt.Errorf("GET k%d after the failover = %d, %v", i, v, err)
			}
		}
		return nil
	})
}
