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
	"github.com/joinery/joinery/sources"
)

// waitIdle waits until every entry pending on consumer has been idle for d.
func waitIdle(t *testing.T, c *redis.Client, stream, group, consumer string, d time.Duration) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, func() error {
		ps, err := c.XPendingExt(context.Background(), &redis.XPendingExtArgs{
			Stream: stream, Group: group, Consumer: consumer, Start: "-", End: "+", Count: 1000,
		}).Result()
		if err != nil {
			return err
		}
		for _, p := range ps {
			if p.Idle < d {
				return fmt.Errorf("entry %s idle %v", p.ID, p.Idle)
			}
		}
		return nil
	})
}

// readFor reads for d and returns everything delivered.
func readFor(t *testing.T, s *Source, d time.Duration) []sources.Message {
	t.Helper()
	var out []sources.Message
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		msgs, err := s.Read(context.Background(), 100)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, msgs...)
	}
	return out
}

func pendingOf(t *testing.T, c *redis.Client, stream, group string) map[string]int64 {
	t.Helper()
	p, err := c.XPending(context.Background(), stream, group).Result()
	if err != nil {
		t.Fatal(err)
	}
	return p.Consumers
}

func TestRedisStreamSourceClaimAtStart(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	appendValues(t, admin, "in", "a", "b", "c", "d", "e")

	// a reads everything, acknowledges a and b, and is abandoned.
	a, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, Stream: "in", Group: "g", Consumer: "a", Block: 20 * time.Millisecond, Lease: -1})
	if err != nil {
		t.Fatal(err)
	}
	msgs := readN(t, a, 5, 10)
	if err := a.Commit(ctx, []record.Position{msgs[1].Pos}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	appendValues(t, admin, "in", "f", "g")
	const idle = 100 * time.Millisecond
	waitIdle(t, admin, "in", "g", "a", idle)

	// b claims c, d, e at start and delivers them, in order, before f, g.
	b, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, Stream: "in", Group: "g", Consumer: "b", Block: 20 * time.Millisecond, ClaimMinIdle: idle, Lease: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	msgs = readN(t, b, 5, 2)
	if got := values(msgs); got != "c,d,e,f,g" {
		t.Fatalf("b read %s, want c,d,e,f,g", got)
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Pos.Offset <= msgs[i-1].Pos.Offset {
			t.Fatalf("offsets not increasing at %d", i)
		}
	}
	if err := b.Commit(ctx, []record.Position{msgs[4].Pos}); err != nil {
		t.Fatal(err)
	}
	if p := pendingOf(t, admin, "in", "g"); len(p) != 0 {
		t.Fatalf("pending after ack: %v", p)
	}
	// Nothing comes back after the ack, even after several claim periods.
	if more := readFor(t, b, 4*idle); len(more) != 0 {
		t.Fatalf("b read %s again", values(more))
	}
}

func TestRedisStreamSourceClaimPeriodic(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	const idle = 100 * time.Millisecond
	b, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, Stream: "in", Group: "g", Consumer: "b", Block: 20 * time.Millisecond, ClaimMinIdle: idle, Lease: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := readFor(t, b, 50*time.Millisecond); len(got) != 0 {
		t.Fatalf("b read %s from an empty stream", values(got))
	}

	// a, running next to b, reads a and b and dies without acking.
	a, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, Stream: "in", Group: "g", Consumer: "a", Block: 20 * time.Millisecond, Lease: -1})
	if err != nil {
		t.Fatal(err)
	}
	appendValues(t, admin, "in", "a", "b")
	readN(t, a, 2, 10)
	a.Close()

	// b claims them once they are idle long enough.
	msgs := readN(t, b, 2, 10)
	if got := values(msgs); got != "a,b" {
		t.Fatalf("b read %s, want a,b", got)
	}
	if p := pendingOf(t, admin, "in", "g"); p["b"] != 2 || p["a"] != 0 {
		t.Fatalf("pending %v, want 2 on b", p)
	}
	appendValues(t, admin, "in", "c")
	msgs = append(msgs, readN(t, b, 1, 10)...)
	if got := values(msgs); got != "a,b,c" {
		t.Fatalf("b read %s, want a,b,c", got)
	}
	if err := b.Commit(ctx, []record.Position{msgs[2].Pos}); err != nil {
		t.Fatal(err)
	}
	if p := pendingOf(t, admin, "in", "g"); len(p) != 0 {
		t.Fatalf("pending after ack: %v", p)
	}
	if more := readFor(t, b, 4*idle); len(more) != 0 {
		t.Fatalf("b read %s again", values(more))
	}
}

func TestRedisStreamSourceClaimDisabled(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	appendValues(t, admin, "in", "a")
	a, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, Stream: "in", Group: "g", Consumer: "a", Block: 20 * time.Millisecond, Lease: -1})
	if err != nil {
		t.Fatal(err)
	}
	readN(t, a, 1, 10)
	a.Close()
	waitIdle(t, admin, "in", "g", "a", 20*time.Millisecond)
	b, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, Stream: "in", Group: "g", Consumer: "b", Block: 20 * time.Millisecond, ClaimMinIdle: -1, Lease: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := readFor(t, b, 200*time.Millisecond); len(got) != 0 {
		t.Fatalf("b read %s with claiming disabled", values(got))
	}
	if p := pendingOf(t, admin, "in", "g"); p["a"] != 1 {
		t.Fatalf("pending %v, want 1 on a", p)
	}
}
