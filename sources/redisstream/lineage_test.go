package redisstream

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

	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
)

// storeView plays the node's part in Applied: it records the lineage each
// partition's commit carried and answers from store, except that a
// partition the store has no offset for, whose commit carried a lineage of
// another incarnation than current (its first letter), gets -1: the store
// applied nothing.
type storeView struct {
	mu      sync.Mutex
	current string
	store   map[int32]int64
	seen    map[int32]string
}

func (v *storeView) applied(_ context.Context, p int32, lineage string) (int64, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen == nil {
		v.seen = map[int32]string{}
	}
	v.seen[p] = lineage
	if off, ok := v.store[p]; ok {
		return off, true, nil
	}
	if lineage != "" && lineage[:1] != v.current {
		return -1, true, nil
	}
	return 0, false, nil
}

func (v *storeView) set(current string, store map[int32]int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.current, v.store, v.seen = current, store, nil
}

func (v *storeView) lineages() map[int32]string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.seen)
}

// TestRedisStreamSourceLineage: Commit writes Config.Lineage beside the
// group (LineageKey), after its XACKs; the next source hands it to Applied.
// A store restarted empty (no offset; the lineage is of another
// incarnation: Applied says -1) makes the group go back to 0-0, so every
// entry, acknowledged or pending, comes again once and in order. Once the
// stream trimmed entries, that fails with a LostRangeError.
func TestRedisStreamSourceLineage(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	ids := appendValues(t, admin, "in", "a", "b", "c", "d", "e", "f", "g")
	off := func(i int) int64 { o, _ := Offset(ids[i]); return o }
	var lineage struct {
		sync.Mutex
		v string
	}
	setLineage := func(v string) { lineage.Lock(); lineage.v = v; lineage.Unlock() }
	view := &storeView{current: "a"}
	cfg := Config{Name: "users", Options: redisopts.Options{Addr: r.Addr}, Stream: "in", Group: "g", Consumer: "c1", Block: 50 * time.Millisecond,
		Lineage: func() string { lineage.Lock(); defer lineage.Unlock(); return lineage.v },
		Applied: view.applied}
	open := func() *Source {
		t.Helper()
		s, err := New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	run := func(n int) string { // open, read n, commit none, close
		t.Helper()
		s := open()
		defer s.Close()
		got := values(readN(t, s, n, 3))
		if more, err := s.Read(ctx, 10); err != nil || len(more) != 0 {
			t.Fatalf("after %s read %q, %v", got, values(more), err)
		}
		return got
	}
	key := LineageKey("in", "g")

	// Read everything; acknowledge a..e under lineage a1; f, g stay pending.
	s := open()
	readN(t, s, 7, 3)
	if got := view.lineages(); !maps.Equal(got, map[int32]string{0: ""}) {
		t.Fatalf("first open: Applied got lineages %v, want none committed yet", got)
	}
	setLineage("a1/1073741824/4")
	if err := s.Commit(ctx, []record.Position{{Source: "users", Offset: off(4)}}); err != nil {
		t.Fatal(err)
	}
	if got := admin.Get(ctx, key).Val(); got != "a1/1073741824/4" {
		t.Fatalf("%s = %q after Commit, want the lineage", key, got)
	}
	s.Close()

	// Same incarnation, no offset in the store: not a rollback, the usual
	// restart; Applied got the commit's lineage back.
	view.set("a", nil)
	if got := run(2); got != "f,g" {
		t.Fatalf("store of the same incarnation: read %s, want f,g", got)
	}
	if got := view.lineages(); !maps.Equal(got, map[int32]string{0: "a1/1073741824/4"}) {
		t.Fatalf("Applied got lineages %v, want the commit's", got)
	}

	// The store was restarted empty (incarnation b): every entry again.
	view.set("b", nil)
	s2 := open()
	if got := values(readN(t, s2, 7, 3)); got != "a,b,c,d,e,f,g" {
		t.Fatalf("store restarted empty: read %s, want every entry once", got)
	}
	if more, err := s2.Read(ctx, 10); err != nil || len(more) != 0 {
		t.Fatalf("after every entry read %q, %v", values(more), err)
	}
	if p := admin.XPending(ctx, "in", "g").Val(); p.Count != 7 || p.Lower != ids[0] {
		t.Errorf("pending after the rewind: %+v, want a..g", p)
	}
	setLineage("b1/2147483648/1")
	if err := s2.Commit(ctx, []record.Position{{Source: "users", Offset: off(6)}}); err != nil {
		t.Fatal(err)
	}
	if got := admin.Get(ctx, key).Val(); got != "b1/2147483648/1" {
		t.Fatalf("%s = %q after the second Commit, want b1/2147483648/1", key, got)
	}
	s2.Close()

	// The stream trimmed a and b; the store is restarted empty again: lost.
	if err := admin.XTrimMinID(ctx, "in", ids[2]).Err(); err != nil {
		t.Fatal(err)
	}
	view.set("c", nil)
	s3 := open()
	_, err := s3.Read(ctx, 10)
	var lost *LostRangeError
	if !errors.As(err, &lost) || lost.After != -1 || lost.Before != ids[2] || lost.Through != "" {
		t.Fatalf("Read = %v, want a LostRangeError of every entry, before %s", err, ids[2])
	}
	if !errors.Is(err, sources.ErrLostRange) || !strings.Contains(err.Error(), "restarted empty") {
		t.Errorf("%v does not match sources.ErrLostRange or does not say the store was restarted empty", err)
	}
	t.Log(err)
	s3.Close()

	// A store restarted empty whose stream's group delivered nothing yet
	// (the stream trimmed entries nobody read): nothing to rewind, nothing
	// lost.
	appendValues(t, admin, "fresh", "x")
	fresh := cfg
	fresh.Stream = "fresh"
	if err := admin.Set(ctx, LineageKey("fresh", "g"), "a1/1073741824/9", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.XTrimMaxLen(ctx, "fresh", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s4, err := New(ctx, fresh)
	if err != nil {
		t.Fatal(err)
	}
	defer s4.Close()
	if msgs, err := s4.Read(ctx, 10); err != nil || len(msgs) != 0 {
		t.Fatalf("Read of a group that delivered nothing = %q, %v; want nothing, nil", values(msgs), err)
	}
}

// TestShardedLineage: a sharded source writes the lineage beside each
// shard stream's group, and hands each shard's back to Applied.
func TestShardedLineage(t *testing.T) {
	rs := testutil.StartRedis(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	ctx := context.Background()
	for i := range 2 {
		appendValues(t, rc, ShardStream("cdc", i), fmt.Sprintf("s%d", i))
	}
	view := &storeView{current: "a"}
	lin := "a1/1073741824/1"
	cfg := Config{Name: "cdc", Options: redisopts.Options{Addr: rs.Addr}, Stream: "cdc", Group: "g", Consumer: "a",
		Block: 20 * time.Millisecond, Lease: 300 * time.Millisecond, Shards: 2,
		Lineage: func() string { return lin }, Applied: view.applied}
	src, err := NewSharded(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []sources.Message
	testutil.WaitFor(t, 10*time.Second, func() error {
		msgs, err := src.Read(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msgs...)
		if len(got) < 2 {
			return fmt.Errorf("read %d of 2", len(got))
		}
		return nil
	})
	var upTo []record.Position
	for _, m := range got {
		upTo = append(upTo, m.Pos)
	}
	if err := src.Commit(ctx, upTo); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if v := rc.Get(ctx, LineageKey(ShardStream("cdc", i), "g")).Val(); v != lin {
			t.Errorf("shard %d lineage %q, want %q", i, v, lin)
		}
	}
	src.Close()

	// Restarted empty: both shards again, each told its lineage.
	view.set("b", nil)
	src2, err := NewSharded(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer src2.Close()
	got = nil
	testutil.WaitFor(t, 10*time.Second, func() error {
		msgs, err := src2.Read(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msgs...)
		if len(got) < 2 {
			return fmt.Errorf("read %d of 2 again", len(got))
		}
		return nil
	})
	if v := values(got); v != "s0,s1" && v != "s1,s0" {
		t.Errorf("read %s again, want s0 and s1", v)
	}
	if seen := view.lineages(); !maps.Equal(seen, map[int32]string{0: lin, 1: lin}) {
		t.Errorf("Applied got %v, want both shards' lineage", seen)
	}
}
