package redisstream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/record"

	"github.com/joinery/joinery/sources"
)

// TestRedisStreamSourceRewindsToTheStore: a state store that lost writes
// (its applied offset is behind entries the group acknowledged) makes the
// first Read move the group back, so every entry after the store's offset
// — acknowledged or still pending — is delivered again, once and in order,
// and the pending entries the store already applied are acknowledged. A
// store that is not behind leaves the usual restart (pending first, then
// new). A stream that deleted or trimmed entries of the lost range fails
// with a LostRangeError.
func TestRedisStreamSourceRewindsToTheStore(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	ids := appendValues(t, admin, "in", "a", "b", "c", "d", "e", "f", "g")
	off := func(i int) int64 { o, _ := Offset(ids[i]); return o }
	var applied struct {
		off int64
		ok  bool
	}
	cfg := Config{Name: "users", Options: redisopts.Options{Addr: r.Addr}, Stream: "in", Group: "g", Consumer: "c1", Block: 50 * time.Millisecond,
		Applied: func(_ context.Context, p int32, _ string) (int64, bool, error) {
			if p != 0 {
				t.Errorf("Applied asked for partition %d", p)
			}
			return applied.off, applied.ok, nil
		}}
	run := func(n int) string { // open, read n, commit none, close
		t.Helper()
		s, err := New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		got := values(readN(t, s, n, 2))
		if more, err := s.Read(ctx, 10); err != nil || len(more) != 0 {
			t.Fatalf("after %s read %q, %v", got, values(more), err)
		}
		return got
	}
	// Read everything; acknowledge a..e; f and g stay pending.
	s, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	readN(t, s, 7, 3)
	if err := s.Commit(ctx, []record.Position{{Source: "users", Offset: off(4)}}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// The store is not behind (it applied e): the usual restart.
	applied.off, applied.ok = off(4), true
	if got := run(2); got != "f,g" {
		t.Fatalf("store at e: read %s, want f,g", got)
	}
	// The store knows nothing of the stream: the usual restart too.
	applied.ok = false
	if got := run(2); got != "f,g" {
		t.Fatalf("store without offsets: read %s, want f,g", got)
	}
	// The store went back to b: c, d, e (acknowledged) and f, g (pending)
	// come again, once each; nothing stays pending at or below b.
	applied.off, applied.ok = off(1), true
	if got := run(5); got != "c,d,e,f,g" {
		t.Fatalf("store back at b: read %s, want c,d,e,f,g", got)
	}
	if p := admin.XPending(ctx, "in", "g").Val(); p.Count != 5 || p.Lower != ids[2] {
		t.Errorf("pending after the rewind: %+v, want c..g", p)
	}

	// The stream trimmed a and b, then the store went back to a: b is gone.
	if err := admin.XTrimMinID(ctx, "in", ids[2]).Err(); err != nil {
		t.Fatal(err)
	}
	applied.off = off(0)
	s3, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	_, err = s3.Read(ctx, 10)
	var lost *LostRangeError
	if !errors.As(err, &lost) || lost.After != off(0) || lost.Before != ids[2] {
		t.Fatalf("Read = %v, want a LostRangeError after %s, before %s", err, ids[0], ids[2])
	}
	if !errors.Is(err, sources.ErrLostRange) {
		t.Errorf("%v does not match sources.ErrLostRange", err)
	}
	t.Log(err)

	// An entry of the lost range deleted with XDEL: also lost.
	s3.Close() // let the next source take the lease
	applied.off = off(3)
	if err := admin.XDel(ctx, "in", ids[4]).Err(); err != nil {
		t.Fatal(err)
	}
	s4, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s4.Close()
	if _, err = s4.Read(ctx, 10); !errors.As(err, &lost) || lost.Through != ids[4] || lost.Before != "" {
		t.Fatalf("Read = %v, want a LostRangeError through the deleted %s", err, ids[4])
	}
}

// TestRedisStreamSourceRewindBeforeIdlePending: after a rewind the entries
// pending past the store's offset (delivered before the crash, never
// acknowledged) have been idle longer than ClaimMinIdle when the node comes
// back (it took that long to stop): the periodic claim must not deliver them
// ahead of the rewound range — neither at the first Read nor later while
// the rewound range is being read — or the key actors that take them first
// skip the lost range. Every entry after the store's offset comes once, in
// order, whoever held it pending.
func TestRedisStreamSourceRewindBeforeIdlePending(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	ids := appendValues(t, admin, "in", "a", "b", "c", "d", "e", "f", "g", "h")
	off := func(i int) int64 { o, _ := Offset(ids[i]); return o }
	const idle = 200 * time.Millisecond
	cfg := Config{Name: "users", Options: redisopts.Options{Addr: r.Addr}, Stream: "in", Group: "g", Consumer: "c1", Block: 20 * time.Millisecond,
		ClaimMinIdle: idle, Lease: time.Second}
	// c1 reads a..f and acknowledges a..d (the store committed d, then went
	// back to b); e, f stay pending on c1. c0, a reader before it, left h
	// pending: it read g, h ahead of c1 in a test of the no-lease mode.
	s, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	readN(t, s, 6, 6)
	if err := s.Commit(ctx, []record.Position{{Source: "users", Offset: off(3)}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := admin.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c0", Streams: []string{"in", ">"}, Count: 2}).Err(); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, admin, "in", "g", "c1", 2*idle)
	waitIdle(t, admin, "in", "g", "c0", 2*idle)

	cfg.Applied = func(context.Context, int32, string) (int64, bool, error) { return off(1), true, nil }
	s2, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	// One entry a Read, slower than the periodic claims, so that the claims
	// get their chance while the rewound range is read.
	var got []sources.Message
	for len(got) < 6 {
		msgs, err := s2.Read(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msgs...)
		time.Sleep(idle)
	}
	got = append(got, readFor(t, s2, 3*idle)...)
	if v := values(got); v != "c,d,e,f,g,h" {
		t.Fatalf("after the rewind to b: read %s, want c,d,e,f,g,h", v)
	}
	increasing(t, got)
}
