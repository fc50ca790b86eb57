package node_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"encoding/json"
	"github.com/joinery/joinery/connectors"
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
	xadd(t, rc, "cdc", h.Lines)
	dir := t.TempDir()
	n := start(t, parse(t, dir, "name: streams\n"+joinYAML+fmt.Sprintf(`
state: {store: redis, redis: {addr: %[1]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, group: joinery, tables: {users: left, domains: right}}]
sinks: [{type: redis-stream, redis: {addr: %[1]q}, stream: joined}, {type: table}]
`, rs.Addr)))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(runCtx) }()
	testutil.WaitFor(t, 60*time.Second, joinedAndAcked(n, rc, h.LeftJoin()))
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
	spec.DeadLetter = job.DeadLetter{Type: "file", Conn: connectors.Fields{}}
	if err := spec.DeadLetter.Conn.Set("path", dl); err != nil {
		t.Fatal(err)
	}
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
	// Line 16, a domain without a user_id, matches nothing in this left
	// join: counted as unmatched, not dead-lettered.
	want := []string{"11:not-json", "12:missing-op", "14:unknown-op"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dead letters = %v, want %v", got, want)
	}
	if u := n.Stats().Unmatched.Load(); u != 1 {
		t.Errorf("unmatched = %d, want 1", u)
	}
}

// TestClusterRedisStreamOneReader runs two nodes with the same Redis
// Streams source, as a Helm fleet does (one job file for every pod): only
// one reads the stream at a time (the stream's lease), since consumers
// reading at once would give key actors entries out of offset order, and
// their skip rule would drop some. When the reader stops, the other takes
// over where it left off; the Redis hash view must equal the true join and
// every entry must end acknowledged.
func TestClusterRedisStreamOneReader(t *testing.T) {
	rs := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 31, Users: 20, Domains: 60, Changes: 3000})
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	add := func(lines [][]byte) { xadd(t, rc, "cdc", lines) }
	half := len(h.Lines) / 2
	add(h.Lines[:half])
	dir := t.TempDir()
	yml := "name: onereader\n" + joinYAML + fmt.Sprintf(`
state: {store: redis, redis: {addr: %[1]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, group: joinery, tables: {users: left, domains: right}}]
sinks: [{type: redis-hash, redis: {addr: %[1]q}, key: view}]
`, rs.Addr)
	n1 := start(t, parse(t, dir, yml+"cluster: {node_name: n1}\n"))
	n2 := start(t, parse(t, dir, yml+fmt.Sprintf("cluster: {node_name: n2, seeds: [%q]}\n", n1.GossipAddr())))
	nodes := []*node.Node{n1, n2}
	for _, n := range nodes {
		testutil.WaitFor(t, 20*time.Second, func() error {
			if m := len(n.Members()); m != 2 {
				return fmt.Errorf("%s sees %d members", n.Address(), m)
			}
			return nil
		})
	}
	var cancels [2]context.CancelFunc
	var dones [2]chan error
	for i, n := range nodes {
		runCtx, cancel := context.WithCancel(ctx)
		cancels[i], dones[i] = cancel, make(chan error, 1)
		go func() { dones[i] <- n.Run(runCtx) }()
	}
	acked := func(want int64) func() error {
		return func() error {
			in := n1.Stats().In.Load() + n2.Stats().In.Load()
			if in < want {
				return fmt.Errorf("%d records read, want %d", in, want)
			}
			if p, err := rc.XPending(ctx, "cdc", "joinery").Result(); err != nil || p.Count != 0 {
				return fmt.Errorf("pending entries: %+v %v", p, err)
			}
			return nil
		}
	}
	testutil.WaitFor(t, 60*time.Second, acked(int64(half)))
	in1, in2 := n1.Stats().In.Load(), n2.Stats().In.Load()
	if in1 != 0 && in2 != 0 {
		t.Fatalf("both nodes read the stream (n1 %d, n2 %d records): want one reader at a time", in1, in2)
	}
	reader, other := 0, 1
	if in2 > 0 {
		reader, other = 1, 0
	}
	t.Logf("n%d read the first %d entries; n%d waited", reader+1, half, other+1)
	for i, want := range map[int]float64{reader: 1, other: 0} {
		if got := sourceReading(t, nodes[i]); got != want {
			t.Errorf("n%d joinery_source_reading = %v, want %v", i+1, got, want)
		}
	}
	cancels[reader]()
	if err := <-dones[reader]; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("n%d run: %v", reader+1, err)
	}
	if err := nodes[reader].Close(ctx); err != nil {
		t.Fatal(err)
	}
	before := nodes[reader].Stats().In.Load()
	add(h.Lines[half:])
	testutil.WaitFor(t, 60*time.Second, acked(int64(len(h.Lines))))
	if got := nodes[other].Stats().In.Load(); got != int64(len(h.Lines)-half) {
		t.Errorf("n%d read %d records after taking over, want %d", other+1, got, len(h.Lines)-half)
	}
	if got := sourceReading(t, nodes[other]); got != 1 {
		t.Errorf("n%d joinery_source_reading = %v after taking over, want 1", other+1, got)
	}
	if nodes[reader].Stats().In.Load() != before {
		t.Errorf("n%d read after it stopped", reader+1)
	}
	diff(t, "redis hash view", hashView(t, rc, "view"), h.LeftJoin())
	cancels[other]()
	if err := <-dones[other]; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("n%d run: %v", other+1, err)
	}
}

// xadd appends lines to stream, one entry each (field "value").
func xadd(t *testing.T, rc *redis.Client, stream string, lines [][]byte) {
	t.Helper()
	for _, l := range lines {
		if err := rc.XAdd(context.Background(), &redis.XAddArgs{Stream: stream, Values: map[string]any{"value": string(l)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// sourceReading is the node's joinery_source_reading for source cdc, as
// its /metrics serves it (-1 when absent).
func sourceReading(t *testing.T, n *node.Node) float64 {
	return metricValue(t, n, "joinery_source_reading", `source="cdc"`)
}

// metricValue is the value of the first series of metric name on n's
// /metrics whose labels contain label (-1 when there is none).
func metricValue(t *testing.T, n *node.Node, name, label string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	n.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(l, name+"{") && strings.Contains(l, label) {
			f := strings.Fields(l)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", l, err)
			}
			return v
		}
	}
	return -1
}

// TestNodeRedisStreamsRedisRestart kills Redis — the node's state store, its
// Redis Streams source and one of its sinks — half-way, and restarts it from its
// append-only file: the node stalls and retries instead of failing, then
// reads on; the joined table equals the true join and every entry ends
// acknowledged. joinery_redis_errors_total stays 0 while Redis is up (empty
// blocking reads are not errors) and rises while it is down.
func TestNodeRedisStreamsRedisRestart(t *testing.T) {
	rs := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	h := cdcgen.Generate(cdcgen.Config{Seed: 37, Users: 20, Domains: 60, Changes: 1500})
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	half := len(h.Lines) / 2
	xadd(t, rc, "cdc", h.Lines[:half])
	n := start(t, parse(t, t.TempDir(), "name: restart\n"+joinYAML+fmt.Sprintf(`
state: {store: redis, redis: {addr: %[1]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, group: joinery, tables: {users: left, domains: right}}]
sinks: [{type: table}, {type: redis-stream, redis: {addr: %[1]q}, stream: joined}]
`, rs.Addr)))
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- n.Run(runCtx) }()
	testutil.WaitFor(t, 60*time.Second, func() error {
		if in := n.Stats().In.Load(); in < int64(half) {
			return fmt.Errorf("%d records read, want %d", in, half)
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond) // idle reads that find nothing
	if e := unlabelledValue(t, n, "joinery_redis_errors_total"); e != 0 {
		t.Errorf("joinery_redis_errors_total = %v while Redis was up, want 0", e)
	}
	rs.Kill()
	time.Sleep(1500 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the node stopped while Redis was down: %v", err)
	default:
	}
	down := unlabelledValue(t, n, "joinery_redis_errors_total")
	if down <= 0 {
		t.Errorf("joinery_redis_errors_total = %v after 1.5s of Redis down, want it above 0", down)
	}
	t.Logf("%v failed Redis calls counted while Redis was down", down)
	rs.Start()
	xadd(t, rc, "cdc", h.Lines[half:])
	testutil.WaitFor(t, 60*time.Second, joinedAndAcked(n, rc, h.LeftJoin()))
	if n.Stats().Retries.Load() == 0 {
		t.Error("no retry counted while Redis was down")
	}
	if got, wrote := rc.XLen(ctx, "joined").Val(), n.Stats().Out.Load(); got < wrote {
		t.Errorf("output stream has %d entries, node wrote %d outputs", got, wrote)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
}

// unlabelledValue is the value of n's metric name that has no labels
// (-1: none).
func unlabelledValue(t *testing.T, n *node.Node, name string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	n.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", l, err)
			}
			return f
		}
	}
	return -1
}

// joinedAndAcked is a WaitFor condition: n's table equals want and no entry
// of stream cdc is pending in group joinery.
func joinedAndAcked(n *node.Node, rc *redis.Client, want map[string]string) func() error {
	return func() error {
		if got := tableMap(n.Table()); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("table has %d rows, want %d", len(got), len(want))
		}
		if p, err := rc.XPending(context.Background(), "cdc", "joinery").Result(); err != nil || p.Count != 0 {
			return fmt.Errorf("pending entries: %+v %v", p, err)
		}
		return nil
	}
}
