package redisstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
)

func TestRedisStreamSourceOffset(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want int64
		ok   bool
	}{
		{"0-0", 0, true},
		{"0-1", 1, true},
		{"1-0", 1 << 20, true},
		{"1700000000000-5", 1700000000000<<20 | 5, true},
		{"1-1048575", 1<<20 | 1048575, true},
		{"1-1048576", 0, false},
		{"8796093022208-0", 0, false}, // ms = 2^43
		{"12", 0, false},
		{"a-1", 0, false},
		{"1--1", 0, false},
	} {
		got, err := Offset(tc.id)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("Offset(%q) = %d, %v; want %d ok=%v", tc.id, got, err, tc.want, tc.ok)
		}
		if tc.ok && ID(got) != tc.id {
			t.Errorf("ID(Offset(%q)) = %q", tc.id, ID(got))
		}
	}
}

func TestRedisStreamSourceConfigValidate(t *testing.T) {
	err := Config{Block: -1, Options: redisopts.Options{DB: -1}}.Validate()
	for _, f := range []string{"Addr", "Stream", "Group", "Consumer", "Block", "DB"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Validate error %v does not name %s", err, f)
		}
	}
}

func appendValues(t *testing.T, c *redis.Client, stream string, values ...string) []string {
	t.Helper()
	var ids []string
	for _, v := range values {
		id, err := c.XAdd(context.Background(), &redis.XAddArgs{Stream: stream, Values: []string{streamshard.ValueField, v}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// readN reads until n messages arrived.
func readN(t *testing.T, s *Source, n, max int) []sources.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []sources.Message
	for len(out) < n {
		msgs, err := s.Read(ctx, max)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if len(msgs) > max {
			t.Fatalf("Read returned %d > max %d", len(msgs), max)
		}
		out = append(out, msgs...)
	}
	if len(out) != n {
		t.Fatalf("read %d messages, want %d", len(out), n)
	}
	return out
}

func values(msgs []sources.Message) string {
	var vs []string
	for _, m := range msgs {
		vs = append(vs, string(m.Value))
	}
	return strings.Join(vs, ",")
}

func TestRedisStreamSourceReadAckRestart(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	cfg := Config{Name: "users", Options: redisopts.Options{Addr: r.Addr}, Stream: "in", Group: "g", Consumer: "c1", Block: 50 * time.Millisecond}

	ids := appendValues(t, admin, "in", "a", "b", "c", "d", "e")
	s, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	msgs := readN(t, s, 5, 2)
	if got := values(msgs); got != "a,b,c,d,e" {
		t.Fatalf("read %s", got)
	}
	for i, m := range msgs {
		want, _ := Offset(ids[i])
		if m.Pos != (record.Position{Source: "users", Partition: 0, Offset: want}) {
			t.Fatalf("position %v, want offset %d", m.Pos, want)
		}
	}
	// Timeout: empty slice, no error.
	if more, err := s.Read(ctx, 10); err != nil || more == nil || len(more) != 0 {
		t.Fatalf("idle Read = %v, %v", more, err)
	}
	// Ack a, b, c.
	if err := s.Commit(ctx, []record.Position{msgs[2].Pos, {Source: "other", Offset: 1 << 62}}); err != nil {
		t.Fatal(err)
	}
	if n := admin.XPending(ctx, "in", "g").Val().Count; n != 2 {
		t.Fatalf("pending after commit = %d, want 2", n)
	}
	// Committing the same position again is a no-op.
	if err := s.Commit(ctx, []record.Position{msgs[2].Pos}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Read(ctx, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close = %v", err)
	}

	// Restart: d and e are re-delivered first, then new entries.
	appendValues(t, admin, "in", "f")
	s2, err := New(ctx, cfg) // the group exists: BUSYGROUP is ignored
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	msgs = readN(t, s2, 3, 1)
	if got := values(msgs); got != "d,e,f" {
		t.Fatalf("after restart read %s, want d,e,f", got)
	}
	if err := s2.Commit(ctx, []record.Position{msgs[2].Pos}); err != nil {
		t.Fatal(err)
	}
	if n := admin.XPending(ctx, "in", "g").Val().Count; n != 0 {
		t.Fatalf("pending after commit = %d, want 0", n)
	}
	if err := s2.Commit(ctx, []record.Position{{Source: "users", Partition: 3}}); err == nil {
		t.Fatal("Commit of partition 3 succeeded")
	}
}

func TestRedisStreamSourceEdgeEntries(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	cfg := Config{Options: redisopts.Options{Addr: r.Addr}, Stream: "s", Group: "g", Consumer: "c", Block: 20 * time.Millisecond}
	s, err := New(ctx, cfg) // creates the stream
	if err != nil {
		t.Fatal(err)
	}
	if n := admin.Exists(ctx, "s").Val(); n != 1 {
		t.Fatal("stream not created")
	}
	if err := admin.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"other", "x"}}).Err(); err != nil {
		t.Fatal(err)
	}
	ids := appendValues(t, admin, "s", "gone", "kept")
	msgs := readN(t, s, 3, 10)
	if msgs[0].Value != nil || msgs[0].Pos.Source != "s" {
		t.Fatalf("entry without value field: %v %q", msgs[0].Pos, msgs[0].Value)
	}
	s.Close()
	// Deleted while pending: re-delivered with a nil Value.
	if err := admin.XDel(ctx, "s", ids[0]).Err(); err != nil {
		t.Fatal(err)
	}
	s, err = New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msgs = readN(t, s, 3, 10)
	if msgs[1].Value != nil || string(msgs[2].Value) != "kept" {
		t.Fatalf("re-delivered %q", values(msgs))
	}
	if err := s.Commit(ctx, []record.Position{msgs[2].Pos}); err != nil {
		t.Fatal(err)
	}
	if n := admin.XPending(ctx, "s", "g").Val().Count; n != 0 {
		t.Fatalf("pending = %d, want 0", n)
	}
}

func TestRedisStreamSourceManyAcks(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	const n = 2500
	p := admin.Pipeline()
	for i := 0; i < n; i++ {
		p.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{streamshard.ValueField, fmt.Sprint(i)}})
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, Stream: "s", Group: "g", Consumer: "c", StartID: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msgs := readN(t, s, n, 1000)
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Pos.Offset <= msgs[i-1].Pos.Offset {
			t.Fatalf("offsets not increasing at %d", i)
		}
	}
	if err := s.Commit(ctx, []record.Position{msgs[n-1].Pos}); err != nil {
		t.Fatal(err)
	}
	if c := admin.XPending(ctx, "s", "g").Val().Count; c != 0 {
		t.Fatalf("pending = %d", c)
	}
}

func TestRedisStreamSourceStartIDDollar(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	appendValues(t, admin, "s", "old")
	s, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, Stream: "s", Group: "g", Consumer: "c", StartID: "$", Block: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	appendValues(t, admin, "s", "new")
	if got := values(readN(t, s, 1, 10)); got != "new" {
		t.Fatalf("read %s", got)
	}
}

func TestRedisStreamSourceNewFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	if _, err := New(ctx, Config{Options: redisopts.Options{Addr: addr}, Stream: "s", Group: "g", Consumer: "c"}); err == nil {
		t.Fatal("New without a server succeeded")
	}
	if _, err := New(ctx, Config{}); err == nil {
		t.Fatal("New with empty config succeeded")
	}
}
