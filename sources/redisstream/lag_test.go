package redisstream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/record"
)

func TestRedisStreamSourceLag(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	var log1, log2 partitionLog
	ids := appendValues(t, admin, "in", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	s1 := newLeased(t, leaseConfig(r.Addr, "c1", &log1))
	lag := func(s interface {
		Lag(context.Context) (map[int32]int64, error)
	}) string {
		t.Helper()
		m, err := s.Lag(ctx)
		if err != nil {
			t.Fatalf("Lag: %v", err)
		}
		return fmt.Sprint(m)
	}
	if got := lag(s1); got != "map[]" {
		t.Fatalf("lag before the lease is held = %s, want none", got)
	}
	msgs := readN(t, s1, 4, 4)
	// 4 delivered and pending, 6 not delivered.
	if got := lag(s1); got != "map[0:10]" {
		t.Fatalf("lag after reading 4 of 10 = %s, want map[0:10]", got)
	}
	if err := s1.Commit(ctx, []record.Position{msgs[3].Pos}); err != nil {
		t.Fatal(err)
	}
	if got := lag(s1); got != "map[0:6]" {
		t.Fatalf("lag after committing 4 of 10 = %s, want map[0:6]", got)
	}
	appendValues(t, admin, "in", "k", "l")
	if got := lag(s1); got != "map[0:8]" {
		t.Fatalf("lag after 2 more entries = %s, want map[0:8]", got)
	}
	// An entry deleted from the unread range: Redis no longer knows the
	// group's lag, the source counts the entries after the last delivered.
	if err := admin.XDel(ctx, "in", ids[6]).Err(); err != nil {
		t.Fatal(err)
	}
	if g := admin.XInfoGroups(ctx, "in").Val(); len(g) != 1 || g[0].Lag != -1 {
		t.Fatalf("XINFO GROUPS = %+v, want the lag unknown", g)
	}
	if got := lag(s1); got != "map[0:7]" {
		t.Fatalf("lag after deleting an unread entry = %s, want map[0:7]", got)
	}
	// A second source of the group waits for the lease: it reports nothing.
	s2 := newLeased(t, leaseConfig(r.Addr, "c2", &log2))
	if _, err := s2.Read(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := lag(s2); got != "map[]" {
		t.Fatalf("lag of the waiting source = %s, want none", got)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Lag(ctx); err == nil {
		t.Fatal("Lag after Close succeeded")
	}
}

func TestShardedLag(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	for i := range 3 {
		for j := 0; j <= i; j++ {
			appendValues(t, admin, ShardStream("in", i), fmt.Sprintf("s%d-%d", i, j))
		}
	}
	s, err := NewSharded(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, Stream: "in", Group: "g", Consumer: "c1",
		Block: 20 * time.Millisecond, Lease: 300 * time.Millisecond, Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := s.Lag(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(m); got == "map[0:1 1:2 2:3]" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("sharded lag = %s, want map[0:1 1:2 2:3]", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
