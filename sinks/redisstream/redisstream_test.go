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

	"github.com/joinery/joinery/formats/changelog"
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
	s, err := New(ctx, Config{Addr: r.Addr, Stream: "out"})
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
		o, err := changelog.DecodeChangelog([]byte(e.Values[ValueField].(string)))
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
	s, err := New(ctx, Config{Addr: r.Addr, Stream: "up", Format: changelog.Upsert, MaxLen: 10})
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
		id, key, value, err := changelog.DecodeUpsert([]byte(e.Values[ValueField].(string)))
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
	err := Config{DB: -1, MaxLen: -1, Format: 9}.Validate()
	for _, f := range []string{"Addr", "Stream", "DB", "MaxLen", "Format"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Validate error %v does not name %s", err, f)
		}
	}
	s, err := New(ctx, Config{Addr: r.Addr, Stream: "s"})
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
	if _, err := New(tctx, Config{Addr: fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t)), Stream: "s"}); err == nil {
		t.Fatal("New without a server succeeded")
	}
}
