package redisstream

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

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
		s, err := NewSharded(ctx, Config{Addr: rs.Addr, Stream: "cdc", Group: "g", Consumer: consumer, Shards: 4, RepartitionTo: repart, })
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
		if err := st.src.Repartition(ctx, st.fwd); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
	}
	values := func(g int) []string {
		xs, err := rc.XRange(ctx, streamshard.Stream(repart, g), "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range xs {
			out = append(out, x.Values[ValueField].(string))
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
	if err := a.Repartition(ctx, []sources.Forward{{Pos: record.Position{Source: "cdc", Partition: 0, Offset: 9}, Group: 4}}); err == nil {
		t.Error("a group out of range was written")
	}
}

// TestTrimAcked checks that a source with TrimAcked trims its stream up to
// what it acknowledged, and leaves the rest.
func TestTrimAcked(t *testing.T) {
	rs := testutil.StartRedis(t)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	for i := range 10 {
		rc.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: map[string]any{ValueField: fmt.Sprint(i)}})
	}
	src, err := New(ctx, Config{Addr: rs.Addr, Stream: "s", Group: "g", Consumer: "c", TrimAcked: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var msgs []sources.Message
	for len(msgs) < 10 {
		m, err := src.Read(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m...)
	}
	if err := src.Commit(ctx, []record.Position{msgs[5].Pos}); err != nil {
		t.Fatal(err)
	}
	xs, err := rc.XRange(ctx, "s", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(xs) != 4 || xs[0].Values[ValueField] != "6" {
		t.Errorf("after acknowledging 0..5 the stream holds %d entries from %v, want 4 from 6", len(xs), xs)
	}
}
