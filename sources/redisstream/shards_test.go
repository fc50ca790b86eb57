package redisstream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/record"
)

func TestShardOf(t *testing.T) {
	for _, tc := range []struct {
		key    string
		shards int
	}{{`[42]`, 16}, {`["eu",7]`, 16}, {`[1]`, 1}, {`[1]`, 0}, {`[]`, 3}} {
		got := ShardOf([]byte(tc.key), tc.shards)
		if got < 0 || got >= max(tc.shards, 1) {
			t.Errorf("ShardOf(%s, %d) = %d, out of range", tc.key, tc.shards, got)
		}
		if again := ShardOf([]byte(tc.key), tc.shards); again != got {
			t.Errorf("ShardOf(%s) not stable: %d then %d", tc.key, got, again)
		}
	}
	// The documented hash, written out independently of hash/fnv.
	if got := ShardOf([]byte(`[42]`), 16); got != int(fnv1a32([]byte(`[42]`))%16) {
		t.Errorf("ShardOf([42], 16) = %d, want FNV-1a 32 mod 16 = %d", got, fnv1a32([]byte(`[42]`))%16)
	}
	// The keys spread: 1000 rows over 16 shards leave no shard empty.
	seen := map[int]int{}
	for id := range 1000 {
		seen[ShardOf(fmt.Appendf(nil, "[%d]", id), 16)]++
	}
	if len(seen) != 16 {
		t.Errorf("1000 keys hit %d of 16 shards", len(seen))
	}
}

// fnv1a32 is FNV-1a 32 written out, as a producer in another language would.
func fnv1a32(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

// fleet is a membership list the test changes, as memberlist would.
type fleet struct {
	mu      sync.Mutex
	members []string
}

func (f *fleet) set(ms ...string) {
	f.mu.Lock()
	f.members = ms
	f.mu.Unlock()
}

func (f *fleet) get() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.members)
}

// shardNode runs one sharded source the way the node's reader does: read,
// then commit what was read; it records every delivery.
type shardNode struct {
	name   string
	src    *Sharded
	cancel context.CancelFunc
	done   chan error

	mu   sync.Mutex
	got  map[record.Position]int // deliveries per position
	last map[int32]int64         // last offset delivered per shard
	bad  []string                // offsets not increasing per shard
}

func startShardNode(t *testing.T, addr, name string, shards int, f *fleet, opts ...func(*Config)) *shardNode {
	t.Helper()
	cfg := Config{Name: "cdc", Options: redisopts.Options{Addr: addr}, Stream: "cdc", Group: "g",
		Consumer: name, Block: 20 * time.Millisecond, Lease: 300 * time.Millisecond, Shards: shards, Members: f.get}
	for _, o := range opts {
		o(&cfg)
	}
	src, err := NewSharded(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &shardNode{name: name, src: src, cancel: cancel, done: make(chan error, 1),
		got: map[record.Position]int{}, last: map[int32]int64{}}
	go func() {
		for {
			msgs, err := src.Read(ctx, 7)
			if err != nil {
				n.done <- err
				return
			}
			// A Read holds the batches of every shard that had one
			// ready: offsets grow per shard, and the last of each is
			// committed.
			n.mu.Lock()
			lastOf := map[int32]record.Position{}
			for _, m := range msgs {
				n.got[m.Pos]++
				p := m.Pos.Partition
				if last, ok := n.last[p]; ok && m.Pos.Offset <= last {
					n.bad = append(n.bad, fmt.Sprintf("shard %d: offset %d after %d", p, m.Pos.Offset, last))
				}
				n.last[p] = m.Pos.Offset
				lastOf[p] = m.Pos
			}
			n.mu.Unlock()
			if len(msgs) > 0 {
				if err := src.Commit(ctx, slices.Collect(maps.Values(lastOf))); err != nil {
					n.done <- err
					return
				}
			}
		}
	}()
	t.Cleanup(func() { n.stop(t) })
	return n
}

func (n *shardNode) stop(t *testing.T) {
	t.Helper()
	if n.cancel == nil {
		return
	}
	n.cancel()
	n.cancel = nil
	if err := <-n.done; !errors.Is(err, context.Canceled) {
		t.Errorf("%s: %v", n.name, err)
	}
	if err := n.src.Close(); err != nil {
		t.Error(err)
	}
}

// TestShardedSpreadsAndMoves runs three sharded sources over 8 shards as a
// fleet whose membership changes: one member alone reads every shard; two
// more join and each ends with the shards AssignShards gives it, handed
// over gracefully; one leaves and its shards move to the others. No shard
// is ever held by two sources, offsets grow per shard and source, every
// entry is delivered, and none is left pending.
func TestShardedSpreadsAndMoves(t *testing.T) {
	rs := testutil.StartRedis(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	ctx := context.Background()
	const shards = 8
	total := 0
	add := func(per int) {
		for i := range shards {
			for range per {
				if err := rc.XAdd(ctx, &redis.XAddArgs{Stream: ShardStream("cdc", i), Values: []string{streamshard.ValueField, "x"}}).Err(); err != nil {
					t.Fatal(err)
				}
				total++
			}
		}
	}
	f := &fleet{}
	f.set("a")
	nodes := map[string]*shardNode{}
	nodes["a"] = startShardNode(t, rs.Addr, "a", shards, f)
	var everyNode []*shardNode // c too, after it left
	add(30)

	// No shard held twice, checked continuously while leases move.
	stopWatch := make(chan struct{})
	watchDone := make(chan string, 1)
	var watchMu sync.Mutex
	live := func() []*shardNode {
		watchMu.Lock()
		defer watchMu.Unlock()
		var out []*shardNode
		for _, n := range nodes {
			out = append(out, n)
		}
		return out
	}
	go func() {
		for {
			select {
			case <-stopWatch:
				watchDone <- ""
				return
			case <-time.After(5 * time.Millisecond):
			}
			holder := map[int]string{}
			for _, n := range live() {
				for _, i := range n.src.Held() {
					if h, ok := holder[i]; ok {
						watchDone <- fmt.Sprintf("shard %d held by %s and %s", i, h, n.name)
						return
					}
					holder[i] = n.name
				}
			}
		}
	}()

	held := func(want map[string][]int) func() error {
		return func() error {
			for name, w := range want {
				if got := nodes[name].src.Held(); !slices.Equal(got, w) {
					return fmt.Errorf("%s holds %v, want %v", name, got, w)
				}
			}
			return nil
		}
	}
	expect := func(members ...string) map[string][]int {
		want := map[string][]int{}
		for i, o := range AssignShards(shards, members) {
			want[o] = append(want[o], i)
		}
		return want
	}
	testutil.WaitFor(t, 20*time.Second, held(expect("a")))

	f.set("a", "b", "c")
	watchMu.Lock()
	nodes["b"] = startShardNode(t, rs.Addr, "b", shards, f)
	nodes["c"] = startShardNode(t, rs.Addr, "c", shards, f)
	watchMu.Unlock()
	add(30)
	testutil.WaitFor(t, 20*time.Second, held(expect("a", "b", "c")))
	for _, name := range []string{"a", "b", "c"} {
		if len(nodes[name].src.Held()) == 0 {
			t.Errorf("%s holds no shard", name)
		}
	}
	add(30)

	// c leaves gracefully (its leases are released at Close); the others
	// see it gone and take its shards.
	watchMu.Lock()
	nodes["c"].stop(t)
	everyNode = append(everyNode, nodes["c"])
	delete(nodes, "c")
	watchMu.Unlock()
	f.set("a", "b")
	add(30)
	testutil.WaitFor(t, 20*time.Second, held(expect("a", "b")))

	delivered := func() error {
		seen := map[record.Position]bool{}
		for _, n := range append([]*shardNode{nodes["a"], nodes["b"]}, everyNode...) {
			n.mu.Lock()
			for p := range n.got {
				seen[p] = true
			}
			n.mu.Unlock()
		}
		if len(seen) != total {
			return fmt.Errorf("%d of %d entries delivered", len(seen), total)
		}
		for i := range shards {
			p, err := rc.XPending(ctx, ShardStream("cdc", i), "g").Result()
			if err != nil || p.Count != 0 {
				return fmt.Errorf("shard %d pending %+v %v", i, p, err)
			}
			g, err := rc.XInfoGroups(ctx, ShardStream("cdc", i)).Result()
			if err != nil || len(g) != 1 || g[0].Lag != 0 {
				return fmt.Errorf("shard %d groups %+v %v", i, g, err)
			}
		}
		return nil
	}
	testutil.WaitFor(t, 20*time.Second, delivered)
	close(stopWatch)
	if msg := <-watchDone; msg != "" {
		t.Error(msg)
	}
	for _, n := range nodes {
		n.mu.Lock()
		for _, b := range n.bad {
			t.Errorf("%s: %s", n.name, b)
		}
		n.mu.Unlock()
	}
}

// TestShardedIgnoresNonReaders: a live member that never runs the source
// (a node that only hosts key actors) gets no shards — the fleet is the
// registered readers that membership reports live — so when b leaves, a
// alone reads every shard.
func TestShardedIgnoresNonReaders(t *testing.T) {
	rs := testutil.StartRedis(t)
	const shards = 6
	f := &fleet{}
	f.set("a", "b", "actors-only")
	a := startShardNode(t, rs.Addr, "a", shards, f)
	b := startShardNode(t, rs.Addr, "b", shards, f)
	want := map[string][]int{}
	for i, o := range AssignShards(shards, []string{"a", "b"}) {
		want[o] = append(want[o], i)
	}
	testutil.WaitFor(t, 20*time.Second, func() error {
		if ga, gb := a.src.Held(), b.src.Held(); !slices.Equal(ga, want["a"]) || !slices.Equal(gb, want["b"]) {
			return fmt.Errorf("a holds %v, b %v; want %v", ga, gb, want)
		}
		return nil
	})
	// b leaves the membership and stops: a takes every shard over.
	f.set("a", "actors-only")
	b.stop(t)
	testutil.WaitFor(t, 20*time.Second, func() error {
		if got := a.src.Held(); len(got) != shards {
			return fmt.Errorf("a holds %v, want all %d", got, shards)
		}
		return nil
	})
}

// TestShardedLeaseLost: a shard whose lease another consumer took (this
// one was paused past it) is dropped and reported revoked, the others
// read on, and the shard is taken again once its lease is free.
func TestShardedLeaseLost(t *testing.T) {
	rs := testutil.StartRedis(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	ctx := context.Background()
	var log partitionLog
	src, err := NewSharded(ctx, Config{Name: "cdc", Options: redisopts.Options{Addr: rs.Addr}, Stream: "cdc", Group: "g", Consumer: "a",
		Block: 20 * time.Millisecond, Lease: 300 * time.Millisecond, Shards: 2, OnPartitions: log.hook})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	read := func() {
		if _, err := src.Read(ctx, 10); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		read()
		if got := src.Held(); !slices.Equal(got, []int{0, 1}) {
			return fmt.Errorf("holds %v", got)
		}
		return nil
	})
	// Another consumer takes shard 1's lease, as after a long pause.
	key := LeaseKey(ShardStream("cdc", 1), "g")
	if err := rc.Set(ctx, key, "intruder|99", 2*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.XAdd(ctx, &redis.XAddArgs{Stream: ShardStream("cdc", 1), Values: []string{streamshard.ValueField, "x"}}).Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		read()
		if got := src.Held(); !slices.Equal(got, []int{0}) {
			return fmt.Errorf("holds %v, want [0]", got)
		}
		return nil
	})
	if s := log.String(); !strings.HasSuffix(s, "revoked") {
		t.Errorf("OnPartitions calls %s, want the shard revoked last", s)
	}
	// The intruder's lease lapses: the shard is taken again and its entry read.
	testutil.WaitFor(t, 10*time.Second, func() error {
		msgs, err := src.Read(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 1 && msgs[0].Pos.Partition == 1 && string(msgs[0].Value) == "x" {
			return nil
		}
		return fmt.Errorf("holds %v, read %d messages", src.Held(), len(msgs))
	})
}

// fillShards appends per entries to each of the shard streams of "cdc".
func fillShards(t *testing.T, rc *redis.Client, shards, per int) {
	t.Helper()
	for i := range shards {
		for range per {
			if err := rc.XAdd(context.Background(), &redis.XAddArgs{Stream: ShardStream("cdc", i), Values: []string{streamshard.ValueField, "x"}}).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestShardedReadCoalesces: a Read returns the batches of every shard that
// has one ready, up to max entries, each shard's in stream order; a batch
// that would pass max waits for the next Read. So the caller's batches
// grow with its backlog instead of staying one shard's read each.
func TestShardedReadCoalesces(t *testing.T) {
	rs := testutil.StartRedis(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	ctx := context.Background()
	const shards, per = 4, 5
	fillShards(t, rc, shards, per)
	src, err := NewSharded(ctx, Config{Name: "cdc", Options: redisopts.Options{Addr: rs.Addr}, Stream: "cdc", Group: "g",
		Consumer: "a", Block: 20 * time.Millisecond, Lease: 300 * time.Millisecond, Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	// The entries are there before the readers start: each reads its shard's whole.
	testutil.WaitFor(t, 10*time.Second, func() error {
		if got := src.Held(); len(got) != shards {
			return fmt.Errorf("holds %v", got)
		}
		return nil
	})
	// Every shard's reader holds its batch of per entries.
	time.Sleep(500 * time.Millisecond)
	last := map[int32]int64{}
	total := 0
	for i, max := range []int{2 * per, 100, 100} {
		msgs, err := src.Read(ctx, max)
		if err != nil {
			t.Fatal(err)
		}
		parts := map[int32]bool{}
		for _, m := range msgs {
			p := m.Pos.Partition
			parts[p] = true
			if l, ok := last[p]; ok && m.Pos.Offset <= l {
				t.Errorf("read %d: shard %d: offset %d after %d", i, p, m.Pos.Offset, l)
			}
			last[p] = m.Pos.Offset
		}
		total += len(msgs)
		switch {
		case i == 0 && (len(msgs) != 2*per || len(parts) != 2):
			t.Errorf("read 0 (max %d): %d entries of %d shards; want the batches of 2 shards", max, len(msgs), len(parts))
		case i == 1 && len(msgs) != (shards-2)*per:
			t.Errorf("read 1: %d entries of %d shards; want the %d left", len(msgs), len(parts), (shards-2)*per)
		}
		if total == shards*per {
			break
		}
	}
	if total != shards*per {
		t.Errorf("read %d entries, want %d", total, shards*per)
	}
}

// TestShardedJointRead: once its shards have started, a sharded source
// reads them together: entries that arrive on every shard at once are read
// by one script for all of them (the lease of each checked in it), not one
// per shard.
func TestShardedJointRead(t *testing.T) {
	rs := testutil.StartRedis(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	ctx := context.Background()
	const shards = 4
	src, err := NewSharded(ctx, Config{Name: "cdc", Options: redisopts.Options{Addr: rs.Addr}, Stream: "cdc", Group: "g",
		Consumer: "a", Block: 50 * time.Millisecond, Lease: 300 * time.Millisecond, Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	testutil.WaitFor(t, 10*time.Second, func() error {
		if got := src.Held(); len(got) != shards {
			return fmt.Errorf("holds %v", got)
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond) // every shard past its start, the pump waiting on all
	scripts := func() int {
		info, err := rc.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
				n, _, _ := strings.Cut(rest, ",")
				var calls int
				fmt.Sscan(n, &calls)
				return calls
			}
		}
		return 0
	}
	before := scripts()
	// One entry on every shard, at once.
	if _, err := rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i := range shards {
			p.XAdd(ctx, &redis.XAddArgs{Stream: ShardStream("cdc", i), Values: []string{streamshard.ValueField, "x"}})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := 0
	deadline := time.Now().Add(10 * time.Second)
	for got < shards && time.Now().Before(deadline) {
		msgs, err := src.Read(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		got += len(msgs)
	}
	if got != shards {
		t.Fatalf("read %d entries, want %d", got, shards)
	}
	if n := scripts() - before; n >= shards {
		t.Errorf("%d read scripts for %d shards' entries that came at once; want them read together", n, shards)
	}
}

// TestShardedExpect starts a fleet of three whose members all know each
// other (memberlist) but open their sources 400 ms apart, with Expect 3:
// the first takes no shard until all three read the shards, so no shard is
// ever held by a member other than its owner among the three (nothing is
// handed over), and every entry is delivered. Without Expect the first
// takes every shard and hands most over. A member whose expected peers do
// not come takes every shard once ExpectWait passes.
func TestShardedExpect(t *testing.T) {
	rs := testutil.StartRedis(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	const shards, per = 8, 20
	fillShards(t, rc, shards, per)
	owner := AssignShards(shards, []string{"a", "b", "c"})
	want := map[string][]int{}
	for i, o := range owner {
		want[o] = append(want[o], i)
	}
	expect3 := func(c *Config) { c.Expect, c.ExpectWait = 3, 10*time.Second }
	f := &fleet{}
	f.set("a", "b", "c")
	var mu sync.Mutex
	var nodes []*shardNode
	wrong := map[string]bool{}
	stopWatch := make(chan struct{})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(5 * time.Millisecond):
			}
			mu.Lock()
			for _, n := range nodes {
				for _, i := range n.src.Held() {
					if owner[i] != n.name {
						wrong[fmt.Sprintf("%s held shard %d of %s", n.name, i, owner[i])] = true
					}
				}
			}
			mu.Unlock()
		}
	}()
	for _, name := range []string{"a", "b", "c"} {
		n := startShardNode(t, rs.Addr, name, shards, f, expect3)
		mu.Lock()
		nodes = append(nodes, n)
		mu.Unlock()
		time.Sleep(400 * time.Millisecond)
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		seen := 0
		for _, n := range nodes {
			if got := n.src.Held(); !slices.Equal(got, want[n.name]) {
				return fmt.Errorf("%s holds %v, want %v", n.name, got, want[n.name])
			}
			n.mu.Lock()
			seen += len(n.got)
			n.mu.Unlock()
		}
		if seen != shards*per {
			return fmt.Errorf("%d of %d entries delivered", seen, shards*per)
		}
		return nil
	})
	close(stopWatch)
	<-watchDone
	for _, w := range slices.Sorted(maps.Keys(wrong)) {
		t.Error(w)
	}

	t.Run("wait bounded", func(t *testing.T) {
		lone := &fleet{}
		lone.set("d", "e", "f") // e and f never start
		cfg := func(c *Config) {
			c.Stream, c.Expect, c.ExpectWait = "solo", 3, 300*time.Millisecond
		}
		start := time.Now()
		n := startShardNode(t, rs.Addr, "d", shards, lone, cfg)
		testutil.WaitFor(t, 10*time.Second, func() error {
			if got := n.src.Held(); len(got) != shards {
				return fmt.Errorf("d holds %v, want all %d shards", got, shards)
			}
			return nil
		})
		if took := time.Since(start); took < 300*time.Millisecond {
			t.Errorf("d took the shards %v after its start, before ExpectWait", took)
		}
	})
}
