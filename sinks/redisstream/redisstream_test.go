package redisstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/record"
)

var batch = []record.Output{
	{ID: "u/0@1/1/0/0", Kind: record.Insert, PK: "[1,null]", Row: record.Row{"id": json.Number("1"), "d": nil}},
	{ID: "d/0@1/1/0/0", Kind: record.UpdateBefore, PK: "[1,null]", Row: record.Row{"id": json.Number("1"), "d": nil}},
	{ID: "d/0@1/1/0/1", Kind: record.UpdateAfter, PK: "[1,7]", Row: record.Row{"id": json.Number("1"), "d": "x.org"}},
	{ID: "d/0@2/1/0/0", Kind: record.Delete, PK: "[1,7]", Row: record.Row{"id": json.Number("1"), "d": "x.org"}},
}

func TestRedisStreamSinkChangelog(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	s, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, Stream: "out"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, nil); err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	entries, err := admin.XRange(ctx, "out", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(batch) {
		t.Fatalf("stream has %d entries, want %d", len(entries), len(batch))
	}
	for i, e := range entries {
		if e.Values[IDField] != batch[i].ID {
			t.Fatalf("entry %d id = %v, want %s", i, e.Values[IDField], batch[i].ID)
		}
		o, err := changelog.DecodeChangelog([]byte(e.Values[streamshard.ValueField].(string)))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(o, batch[i]) {
			t.Fatalf("entry %d = %#v, want %#v", i, o, batch[i])
		}
	}
}

func TestRedisStreamSinkUpsertAndTrim(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	s, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, Stream: "up", Format: changelog.Upsert, MaxLen: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	entries := admin.XRange(ctx, "up", "-", "+").Val()
	var got []string
	for _, e := range entries {
		id, key, value, err := changelog.DecodeUpsert([]byte(e.Values[streamshard.ValueField].(string)))
		if err != nil || id != e.Values[IDField] {
			t.Fatalf("entry %v: %v", e.Values, err)
		}
		got = append(got, fmt.Sprintf("%s %s %v", id, key, value != nil))
	}
	want := []string{"u/0@1/1/0/0 [1,null] true", "d/0@1/1/0/1 [1,7] true", "d/0@2/1/0/0 [1,7] false"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	// Approximate trimming keeps the stream near MaxLen.
	big := make([]record.Output, 1000)
	for i := range big {
		big[i] = record.Output{ID: fmt.Sprint(i), Kind: record.Insert, PK: "[1]"}
	}
	if err := s.Write(ctx, big); err != nil {
		t.Fatal(err)
	}
	if n := admin.XLen(ctx, "up").Val(); n >= 500 {
		t.Fatalf("stream length %d, trimming did not happen", n)
	}
}

func TestRedisStreamSinkErrors(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	err := Config{Options: redisopts.Options{DB: -1}, MaxLen: -1, Format: 9}.Validate()
	for _, f := range []string{"Addr", "Stream", "DB", "MaxLen", "Format"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Validate error %v does not name %s", err, f)
		}
	}
	s, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, Stream: "s"})
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]record.Output{batch[0]}, record.Output{ID: "bad", PK: "[oops"})
	if err := s.Write(ctx, bad); err == nil {
		t.Fatal("Write of an unencodable output succeeded")
	}
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	if n := admin.XLen(ctx, "s").Val(); n != 0 {
		t.Fatalf("bad batch wrote %d entries", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Write(ctx, batch); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close = %v", err)
	}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := New(tctx, Config{Options: redisopts.Options{Addr: fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))}, Stream: "s"}); err == nil {
		t.Fatal("New without a server succeeded")
	}
}

// TestRedisStreamSinkShards writes outputs of many rows to 4 shard streams:
// every row's changes are in the shard of its primary key, in write order,
// nothing is written to the unsharded stream, and every output is written.
func TestRedisStreamSinkShards(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	const shards = 4
	s, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, Stream: "out", Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var outs []record.Output
	for i := range 200 {
		pk := fmt.Sprintf("[%d,%d]", i%25, i%3)
		outs = append(outs, record.Output{ID: fmt.Sprint("o", i), Kind: record.Insert, PK: pk, Row: record.Row{"n": json.Number(fmt.Sprint(i))}})
	}
	if err := s.Write(ctx, outs); err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	if n := admin.Exists(ctx, "out").Val(); n != 0 {
		t.Errorf("the unsharded stream exists")
	}
	byPK := map[string][]string{} // pk -> ids in shard order
	total := 0
	used := 0
	for i := range shards {
		entries, err := admin.XRange(ctx, fmt.Sprintf("out.%d", i), "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) > 0 {
			used++
		}
		for _, e := range entries {
			o, err := changelog.DecodeChangelog([]byte(e.Values[streamshard.ValueField].(string)))
			if err != nil {
				t.Fatal(err)
			}
			if want := ShardOf(o, shards); want != i {
				t.Errorf("output %s (pk %s) in shard %d, want %d", o.ID, o.PK, i, want)
			}
			byPK[o.PK] = append(byPK[o.PK], o.ID)
			total++
		}
	}
	if total != len(outs) || used < 2 {
		t.Errorf("%d outputs over %d shards, want %d over several", total, used, len(outs))
	}
	for _, o := range outs {
		ids := byPK[o.PK]
		if len(ids) == 0 || ids[0] != o.ID {
			t.Fatalf("row %s: %v, want %s next (write order)", o.PK, ids, o.ID)
		}
		byPK[o.PK] = ids[1:]
	}
	// Append (dead letters) shards by the id field.
	if err := s.Append(ctx, [][]string{{IDField, "dl-1", streamshard.ValueField, "x"}, {streamshard.ValueField, "no id"}}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("out.%d", srcShard("dl-1", shards))
	if e := admin.XRevRangeN(ctx, want, "+", "-", 1).Val(); len(e) != 1 || e[0].Values[IDField] != "dl-1" {
		t.Errorf("%s ends with %v, want the entry dl-1", want, e)
	}
	if e := admin.XRevRangeN(ctx, "out.0", "+", "-", 1).Val(); len(e) != 1 || e[0].Values[streamshard.ValueField] != "no id" {
		t.Errorf("out.0 ends with %v, want the entry without id", e)
	}
	if _, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, Stream: "out", Shards: -1}); err == nil {
		t.Error("negative Shards accepted")
	}
}

func srcShard(id string, shards int) int { return ShardOf(record.Output{PK: id}, shards) }
