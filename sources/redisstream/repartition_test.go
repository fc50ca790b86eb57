package redisstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
)

// TestShardedRepartitionOnce checks that Repartition writes each raw
// record once, in its shard's order, to its group's stream: a batch
// written again (re-delivered after a crash between the write and the
// XACK), in part or whole, by the same source or by the shard's next
// holder, adds only the records past the highest raw offset written; a
// record forwarded to two groups (a row moving between keys) lands in both.
func TestShardedRepartitionOnce(t *testing.T) {
	rs := testutil.StartRedis(t)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	repart := streamshard.RepartitionStream("cdc", "g")
	open := func(consumer string) *Sharded {
		s, err := NewSharded(ctx, Config{Options: redisopts.Options{Addr: rs.Addr}, Stream: "cdc", Group: "g", Consumer: consumer, Shards: 4, RepartitionTo: repart})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	fwd := func(shard int32, from, to int64, group func(int64) []int) []sources.Forward {
		var out []sources.Forward
		for off := from; off <= to; off++ {
			for _, g := range group(off) {
				out = append(out, sources.Forward{Pos: record.Position{Source: "cdc", Partition: shard, Offset: off},
					Group: g, Value: fmt.Appendf(nil, "%d/%d", shard, off)})
			}
		}
		return out
	}
	one := func(int64) []int { return []int{1} }
	moves := func(off int64) []int { // offset 5 moves a row from group 1 to group 2
		if off == 5 {
			return []int{1, 2}
		}
		return []int{1}
	}
	a, b := open("a"), open("b")
	steps := []struct {
		name string
		src  *Sharded
		fwd  []sources.Forward
	}{
		{"first batch", a, fwd(0, 1, 4, one)},
		{"the same batch again", a, fwd(0, 1, 4, one)},
		{"overlapping, with a move", a, fwd(0, 3, 6, moves)},
		{"the next holder re-delivers", b, fwd(0, 1, 8, moves)},
		{"another shard, same group", b, fwd(3, 1, 2, one)},
		{"offsets past 2^53 compare exactly", b, fwd(3, 1<<60, 1<<60+1, one)},
		{"and again", a, fwd(3, 1<<60, 1<<60+1, one)},
	}
	for _, st := range steps {
		backlog, err := st.src.Repartition(ctx, st.fwd)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if want := rc.XLen(ctx, streamshard.Stream(repart, st.fwd[0].Group)).Val(); backlog < want {
			t.Errorf("%s: backlog %d, want at least the group %d stream's %d entries", st.name, backlog, st.fwd[0].Group, want)
		}
	}
	if backlog, err := b.Backlog(ctx); err != nil || backlog != 12 {
		t.Errorf("Backlog = %d, %v; want 12 (group 1's stream)", backlog, err)
	}
	values := func(g int) []string {
		xs, err := rc.XRange(ctx, streamshard.Stream(repart, g), "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range xs {
			out = append(out, x.Values[streamshard.ValueField].(string))
		}
		return out
	}
	want1 := []string{"0/1", "0/2", "0/3", "0/4", "0/5", "0/6", "0/7", "0/8", "3/1", "3/2",
		fmt.Sprintf("3/%d", int64(1)<<60), fmt.Sprintf("3/%d", int64(1)<<60+1)}
	if got := values(1); !slices.Equal(got, want1) {
		t.Errorf("group 1 stream: %v\nwant %v", got, want1)
	}
	if got := values(2); !slices.Equal(got, []string{"0/5"}) {
		t.Errorf("group 2 stream: %v, want [0/5]", got)
	}
	if _, err := a.Repartition(ctx, []sources.Forward{{Pos: record.Position{Source: "cdc", Partition: 0, Offset: 9}, Group: 4}}); err == nil {
		t.Error("a group out of range was written")
	}
}

// TestShardedBacklog checks that Backlog counts what a repartition
// stream's group has not acknowledged — not the acknowledged entries the
// stream keeps after the store's replay floor, which XLEN counts — and
// falls back to XLEN where there is no group or Redis cannot tell the lag.
func TestShardedBacklog(t *testing.T) {
	rs := testutil.StartRedis(t)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	repart := streamshard.RepartitionStream("cdc", "g")
	src, err := NewSharded(ctx, Config{Options: redisopts.Options{Addr: rs.Addr}, Stream: "cdc", Group: "g", Consumer: "c", Shards: 2, RepartitionTo: repart})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var fwd []sources.Forward
	for off := range int64(10) {
		fwd = append(fwd, sources.Forward{Pos: record.Position{Source: "cdc", Partition: 0, Offset: off}, Group: int(off % 2), Value: []byte("v")})
	}
	if _, err := src.Repartition(ctx, fwd); err != nil {
		t.Fatal(err)
	}
	s0, s1 := streamshard.Stream(repart, 0), streamshard.Stream(repart, 1)
	backlog := func(what string, want int64) {
		t.Helper()
		if got, err := src.Backlog(ctx); err != nil || got != want {
			t.Errorf("%s: Backlog %d, %v; want %d", what, got, err, want)
		}
	}
	backlog("no group: XLEN", 5)
	// Group 0's reader read 4 of its 5 entries and acknowledged 3; its
	// stream keeps them all (the floor is behind). Group 1 has none read.
	for _, st := range []string{s0, s1} {
		if err := rc.XGroupCreate(ctx, st, "g", "0").Err(); err != nil {
			t.Fatal(err)
		}
	}
	xs := rc.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{s0, ">"}, Count: 4}).Val()[0].Messages
	if err := rc.XAck(ctx, s0, "g", xs[0].ID, xs[1].ID, xs[2].ID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.XAdd(ctx, &redis.XAddArgs{Stream: s1, Values: map[string]any{streamshard.ValueField: "w"}}).Err(); err != nil {
		t.Fatal(err)
	}
	backlog("group 0 holds 1 pending and 1 new of 5, group 1 6 new", 6)
	ys := rc.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{s1, ">"}, Count: 6}).Val()[0].Messages
	if err := rc.XAck(ctx, s1, "g", ys[0].ID, ys[1].ID, ys[2].ID).Err(); err != nil {
		t.Fatal(err)
	}
	backlog("group 1 read 6 and acknowledged 3", 3)
	// Moved back without ENTRIESREAD (as a rewind moves it), the group's
	// lag is unknown: XLEN.
	if err := rc.XGroupSetID(ctx, s0, "g", xs[1].ID).Err(); err != nil {
		t.Fatal(err)
	}
	backlog("group 0 moved back", 5)
}

// TestTrimAcked checks that a source with TrimAcked trims its stream up to
// the last entry it acknowledged, which stays (the store's committed offset,
// which the rewind check looks for), and leaves the rest; with KeptFloor
// (the store's replay floor, persistence.FloorStore) no further than the
// floor, whose entry stays too, and not at all while there is none.
func TestTrimAcked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		floor int   // the entry KeptFloor names; -1: KeptFloor nil
		known bool  // KeptFloor's ok
		want  []int // the entries the stream holds after 0..5 were acknowledged: first, count
	}{
		{name: "no floor", floor: -1, want: []int{5, 5}},
		{name: "floor behind the commit", floor: 3, known: true, want: []int{3, 7}},
		{name: "floor at the commit", floor: 5, known: true, want: []int{5, 5}},
		{name: "floor ahead of the commit", floor: 8, known: true, want: []int{5, 5}},
		{name: "floor not known yet", floor: 3, want: []int{0, 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := testutil.StartRedis(t)
			ctx := context.Background()
			rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
			defer rc.Close()
			var vals []string
			for i := range 10 {
				vals = append(vals, fmt.Sprint(i))
			}
			ids := appendValues(t, rc, "s", vals...)
			cfg := Config{Options: redisopts.Options{Addr: rs.Addr}, Stream: "s", Group: "g", Consumer: "c", TrimAcked: true}
			if tc.floor >= 0 {
				floor, err := Offset(ids[tc.floor])
				if err != nil {
					t.Fatal(err)
				}
				cfg.KeptFloor = func(partition int32) (int64, bool) {
					if partition != 0 {
						t.Errorf("KeptFloor of partition %d, want 0", partition)
					}
					return floor, tc.known
				}
			}
			src, err := New(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			msgs := readN(t, src, 10, 10)
			if err := src.Commit(ctx, []record.Position{msgs[5].Pos}); err != nil {
				t.Fatal(err)
			}
			xs, err := rc.XRange(ctx, "s", "-", "+").Result()
			if err != nil {
				t.Fatal(err)
			}
			if first := fmt.Sprint(tc.want[0]); len(xs) != tc.want[1] || xs[0].Values[streamshard.ValueField] != first {
				t.Errorf("after acknowledging 0..5 the stream holds %d entries from %v, want %d from %s", len(xs), xs[0].Values, tc.want[1], first)
			}
		})
	}
}

// TestTrimAckedKeptFloorRewind: the store committed a..d, its applied
// offset (a Redis Cluster store's replay floor) is still b, and the reader
// trimmed no further than b: the next reader, starting at b, reads c, d
// and e — c and d again, which the key actors skip — instead of finding
// them trimmed and failing with a LostRangeError
// (TestClusterRepartitionedGracefulStops in node/).
func TestTrimAckedKeptFloorRewind(t *testing.T) {
	rs := testutil.StartRedis(t)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	ids := appendValues(t, rc, "s", "a", "b", "c", "d", "e")
	floor, err := Offset(ids[1])
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Options: redisopts.Options{Addr: rs.Addr}, Stream: "s", Group: "g", Consumer: "c", TrimAcked: true, Block: 50 * time.Millisecond,
		Applied:   func(context.Context, int32, string) (int64, bool, error) { return floor, true, nil },
		KeptFloor: func(int32) (int64, bool) { return floor, true }}
	src, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	msgs := readN(t, src, 4, 4)
	if err := src.Commit(ctx, []record.Position{msgs[3].Pos}); err != nil {
		t.Fatal(err)
	}
	_ = src.Close()
	next, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if got := values(readN(t, next, 3, 3)); got != "c,d,e" {
		t.Errorf("the next reader read %q, want c,d,e (from the floor on)", got)
	}
}

// TestTrimAckedRewind checks the rewind check on a trimmed stream: a next
// reader whose store committed what was acknowledged reads on (the last
// acknowledged entry, the store's offset, is still there, however far the
// next entry's ID is), and one whose store lost the acknowledged entries
// fails with a LostRangeError.
func TestTrimAckedRewind(t *testing.T) {
	rs := testutil.StartRedis(t)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	ids := appendValues(t, rc, "s", "a", "b", "c", "d")
	later := rc.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "8000000000000-0", Values: map[string]any{streamshard.ValueField: "e"}}).Val()
	var applied int64
	cfg := Config{Options: redisopts.Options{Addr: rs.Addr}, Stream: "s", Group: "g", Consumer: "c", TrimAcked: true, Block: 50 * time.Millisecond,
		Applied: func(context.Context, int32, string) (int64, bool, error) { return applied, true, nil }}
	src, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	msgs := readN(t, src, 5, 5)
	applied = msgs[3].Pos.Offset // the store committed a..d, then they were acknowledged
	if err := src.Commit(ctx, []record.Position{msgs[3].Pos}); err != nil {
		t.Fatal(err)
	}
	_ = src.Close()
	if n := rc.XLen(ctx, "s").Val(); n != 2 {
		t.Fatalf("stream holds %d entries, want d and e", n)
	}
	next, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := values(readN(t, next, 1, 2)); got != "e" {
		t.Errorf("the next reader read %q, want [e] (%s)", got, later)
	}
	_ = next.Close()
	applied, _ = Offset(ids[1]) // the store lost c and d
	lost, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer lost.Close()
	if _, err := lost.Read(ctx, 10); !errors.Is(err, sources.ErrLostRange) {
		t.Errorf("a store behind the trimmed entries: Read error %v, want a LostRangeError", err)
	}
}
