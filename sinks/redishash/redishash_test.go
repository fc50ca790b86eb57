package redishash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/record"
)

func row(name string, d any) record.Row {
	return record.Row{"id": json.Number("1"), "name": name, "d": d}
}

// Outputs of users ⋈ domains (left outer) for: user 1 inserted, domain 7
// added, user 2 inserted; then domain 7 renamed, user 2 deleted.
var (
	batch1 = []record.Output{
		{ID: "u/0@1/1/0/0", Kind: record.Insert, PK: "[1,null]", Row: row("a", nil)},
		{ID: "d/0@1/1/0/0", Kind: record.Delete, PK: "[1,null]", Row: row("a", nil)},
		{ID: "d/0@1/1/0/1", Kind: record.Insert, PK: "[1,7]", Row: row("a", "x.org")},
		{ID: "u/0@2/2/0/0", Kind: record.Insert, PK: "[2,null]", Row: record.Row{"id": json.Number("2"), "name": "<b>", "d": nil}},
	}
	batch2 = []record.Output{
		{ID: "d/0@2/1/0/0", Kind: record.UpdateBefore, PK: "[1,7]", Row: row("a", "x.org")},
		{ID: "d/0@2/1/0/1", Kind: record.UpdateAfter, PK: "[1,7]", Row: row("a", "y.org")},
		{ID: "u/0@3/2/0/0", Kind: record.Delete, PK: "[2,null]"},
	}
)

func TestRedisHashSinkConfigValidate(t *testing.T) {
	err := Config{Options: redisopts.Options{DB: -1}}.Validate()
	for _, f := range []string{"Addr", "Key", "DB"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Validate error %v does not name %s", err, f)
		}
	}
	if err := (Config{Options: redisopts.Options{Addr: "a"}, Key: "k", IDsKey: "k"}).Validate(); err == nil || !strings.Contains(err.Error(), "IDsKey") {
		t.Errorf("Validate with IDsKey = Key: %v", err)
	}
}

func TestRedisHashSinkView(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	s, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, Key: "view"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	check := func(step string, wantView, wantIDs map[string]string) {
		t.Helper()
		if got := admin.HGetAll(ctx, "view").Val(); !reflect.DeepEqual(got, wantView) {
			t.Fatalf("%s: view = %v, want %v", step, got, wantView)
		}
		if got := admin.HGetAll(ctx, "view:ids").Val(); !reflect.DeepEqual(got, wantIDs) {
			t.Fatalf("%s: ids = %v, want %v", step, got, wantIDs)
		}
	}

	if err := s.Write(ctx, batch1); err != nil {
		t.Fatal(err)
	}
	check("batch1", map[string]string{
		"[1,7]":    `{"d":"x.org","id":1,"name":"a"}`,
		"[2,null]": `{"d":null,"id":2,"name":"<b>"}`,
	}, map[string]string{"[1,7]": "d/0@1/1/0/1", "[2,null]": "u/0@2/2/0/0"})

	if err := s.Write(ctx, batch2); err != nil {
		t.Fatal(err)
	}
	final := map[string]string{"[1,7]": `{"d":"y.org","id":1,"name":"a"}`}
	finalIDs := map[string]string{"[1,7]": "d/0@2/1/0/1"}
	check("batch2", final, finalIDs)

	// Replays: the same batch again, and the whole sequence again (with
	// other batch boundaries), end in the same view.
	if err := s.Write(ctx, batch2); err != nil {
		t.Fatal(err)
	}
	check("replay batch2", final, finalIDs)
	all := append(append([]record.Output{}, batch1...), batch2...)
	for _, b := range [][]record.Output{all[:3], all[3:], nil} {
		if err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	check("replay all", final, finalIDs)

	// A bad output fails the batch before anything is applied.
	bad := []record.Output{
		{ID: "z/0@9/3/0/0", Kind: record.Insert, PK: "[3,null]", Row: row("c", nil)},
		{ID: "z/0@9/3/0/1", Kind: record.Insert, PK: "[3,8]", Row: row("c", math.Inf(1))},
	}
	if err := s.Write(ctx, bad); err == nil {
		t.Fatal("Write of an unencodable row succeeded")
	}
	if err := s.Write(ctx, []record.Output{{ID: "k", Kind: 9}}); err == nil {
		t.Fatal("Write of an unknown kind succeeded")
	}
	check("bad", final, finalIDs)

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Write(ctx, batch1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close = %v", err)
	}
}

func TestRedisHashSinkIDsKeyAndDB(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	s, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr, DB: 2}, Key: "{v}rows", IDsKey: "{v}ids"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(ctx, batch1[2:3]); err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: r.Addr, DB: 2})
	defer admin.Close()
	if got := admin.HGet(ctx, "{v}ids", "[1,7]").Val(); got != "d/0@1/1/0/1" {
		t.Fatalf("id = %q", got)
	}
	if n := admin.HLen(ctx, "{v}rows").Val(); n != 1 {
		t.Fatalf("rows = %d", n)
	}
}

func TestRedisHashSinkNewFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	if _, err := New(ctx, Config{Options: redisopts.Options{Addr: addr}, Key: "v"}); err == nil {
		t.Fatal("New without a server succeeded")
	}
	if _, err := New(ctx, Config{}); err == nil {
		t.Fatal("New with empty config succeeded")
	}
}

// TestRedisHashSinkOrdersBySeq writes one key's outputs out of order, in
// separate batches as two sources would: the view ends with the newest row,
// a delete is not undone by an older insert arriving after it, and outputs
// without a Seq still apply as they come.
func TestRedisHashSinkOrdersBySeq(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	s, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, Key: "view"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rc := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rc.Close()
	v1 := record.Output{ID: "a", Kind: record.Insert, PK: "[1,7]", Row: row("a", "v1"), Seq: 10}
	v2 := record.Output{ID: "b", Kind: record.UpdateAfter, PK: "[1,7]", Row: row("a", "v2"), Seq: 11}
	del := record.Output{ID: "c", Kind: record.Delete, PK: "[1,8]", Seq: 13}
	ins := record.Output{ID: "d", Kind: record.Insert, PK: "[1,8]", Row: row("a", "old"), Seq: 12}
	for _, b := range [][]record.Output{{v2}, {v1}, {del}, {ins}, {v1}} {
		if err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	got := rc.HGetAll(ctx, "view").Val()
	if len(got) != 1 || !strings.Contains(got["[1,7]"], `"v2"`) {
		t.Errorf("view %v: want only [1,7] at v2 (the older v1 and the insert before the delete skipped)", got)
	}
	if id := rc.HGet(ctx, "view:ids", "[1,7]").Val(); id != "b" {
		t.Errorf("id of [1,7] = %q, want b", id)
	}
	if seq := rc.HGet(ctx, "view:seq", "[1,8]").Val(); seq != fmt.Sprintf("%020d", 13) {
		t.Errorf("seq of deleted [1,8] = %q, want 13 kept", seq)
	}
	// Unordered outputs (Seq 0) apply in arrival order.
	if err := s.Write(ctx, []record.Output{{ID: "e", Kind: record.Insert, PK: "[2,null]", Row: row("b", nil)}}); err != nil {
		t.Fatal(err)
	}
	if rc.HExists(ctx, "view", "[2,null]").Val() != true {
		t.Error("an output without Seq was not applied")
	}
	// A Seq above 2^53 still compares exactly (strings, not Lua doubles).
	big := uint64(1) << 60
	for _, o := range []record.Output{{ID: "f", Kind: record.Insert, PK: "[3,null]", Row: row("c", "new"), Seq: big + 1},
		{ID: "g", Kind: record.Insert, PK: "[3,null]", Row: row("c", "old"), Seq: big}} {
		if err := s.Write(ctx, []record.Output{o}); err != nil {
			t.Fatal(err)
		}
	}
	if v := rc.HGet(ctx, "view", "[3,null]").Val(); !strings.Contains(v, `"new"`) {
		t.Errorf("[3,null] = %s, want the row of the higher Seq", v)
	}
}
