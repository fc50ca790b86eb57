package testutil

import (
	"context"
	"fmt"
	"testing"

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
