package node_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"encoding/json"
	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/node"
)

// TestNodeRedisStreams runs the join from a Redis Stream (consumer group) to
// a Redis Stream sink with Redis state, and checks the result, that the
// output stream holds every output, and that every input entry was
// acknowledged once durable.
func TestNodeRedisStreams(t *testing.T) {
	rs := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 5, Users: 20, Domains: 60, Changes: 800})
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	for _, l := range h.Lines {
		if err := rc.XAdd(ctx, &redis.XAddArgs{Stream: "cdc", Values: map[string]any{"value": string(l)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	n := start(t, parse(t, dir, "name: streams\n"+joinYAML+fmt.Sprintf(`
state: {store: redis, redis: {addr: %[1]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, group: joinery, tables: {users: left, domains: right}}]
sinks: [{type: redis-stream, redis: {addr: %[1]q}, stream: joined}, {type: table}]
`, rs.Addr)))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(runCtx) }()
	want := h.LeftJoin()
	testutil.WaitFor(t, 60*time.Second, func() error {
		if got := tableMap(n.Table()); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("table has %d rows, want %d", len(got), len(want))
		}
		if p, err := rc.XPending(ctx, "cdc", "joinery").Result(); err != nil || p.Count != 0 {
			return fmt.Errorf("pending entries: %+v %v", p, err)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
	if got, want := rc.XLen(ctx, "joined").Val(), n.Stats().Out.Load(); got != want {
		t.Errorf("output stream has %d entries, node wrote %d outputs", got, want)
	}
}

// TestNodeDeadLetter checks that every bad record of the example lands in
// the dead-letter file with its reason, position and raw bytes.
func TestNodeDeadLetter(t *testing.T) {
	spec, err := job.Load("../examples/users-domains/job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec.Sources[0].Rate = 0
	dl := filepath.Join(t.TempDir(), "dead.jsonl")
	spec.DeadLetter = job.DeadLetter{Type: "file", Path: dl}
	n := start(t, spec)
	run(t, n)
	f, err := os.Open(dl)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r node.DeadLetterRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("dead letter line %q: %v", sc.Text(), err)
		}
		if r.Raw == "" || r.Position.Offset == 0 || r.Error == "" {
			t.Errorf("incomplete dead letter %+v", r)
		}
		got = append(got, fmt.Sprintf("%d:%s", r.Position.Offset, r.Reason))
	}
	want := []string{"11:not-json", "12:missing-op", "14:unknown-op", "16:missing-key"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dead letters = %v, want %v", got, want)
	}
}
