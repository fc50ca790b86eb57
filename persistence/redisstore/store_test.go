package redisstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/persistence/storetest"
	"github.com/joinery/joinery/record"

	"github.com/joinery/joinery/connopts/redisopts"
)

func newStore(t testing.TB, addr string) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := New(ctx, Config{Options: redisopts.Options{Addr: addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestStoreRedisConformance runs the store suite on one real server per
// subtest. The rollback subtests send it back in time for real: SAVE
// writes the server's dump, and restoring kills it (-9) and starts it again
// on the same port and directory, so it loads the older dump.
func TestStoreRedisConformance(t *testing.T) {
	var mu sync.Mutex
	servers := map[string]*testutil.Redis{}
	storetest.Run(t, func(t *testing.T) persistence.Store {
		r := testutil.StartRedis(t, "--dbfilename", "dump.rdb")
		mu.Lock()
		servers[r.Addr] = r
		mu.Unlock()
		return newStore(t, r.Addr)
	}, storetest.WithReopen(func(t *testing.T, old persistence.Store) persistence.Store {
		addr := old.(*Store).cfg.Addr
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}
		return newStore(t, addr)
	}), storetest.WithRollback(func(t *testing.T, s persistence.Store) func() {
		mu.Lock()
		r := servers[s.(*Store).cfg.Addr]
		mu.Unlock()
		if err := rawClient(t, r.Addr).Save(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		return func() {
			r.Kill()
			r.Start()
		}
	}))
}

// TestStoreRedisKeyPrefix runs the suite with a custom prefix and a second
// store with another prefix on the same server, which must see nothing.
func TestStoreRedisKeyPrefix(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	a, err := New(ctx, Config{Options: redisopts.Options{Addr: r.Addr}, KeyPrefix: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := newStore(t, r.Addr)
	e, err := a.Acquire(ctx, "job", "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "k", State: []byte("v"), Epoch: e}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Load(ctx, "job", "k"); !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("store with prefix joinery sees prefix a's key: %v", err)
	}
	if e, err := b.Epoch(ctx, "job", "k"); err != nil || e != 0 {
		t.Fatalf("store with prefix joinery sees prefix a's epoch: %d, %v", e, err)
	}
	if err := a.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "k", State: []byte("v"), Epoch: e,
		HasTimer: true, NextTimer: 5}}); err != nil {
		t.Fatal(err)
	}
	if due, err := b.DueTimers(ctx, "job", 10, 10); err != nil || len(due) != 0 {
		t.Fatalf("store with prefix joinery sees prefix a's timers: %v, %v", due, err)
	}
	gp := layoutOf("a", "job").keyPrefix("k")
	if !strings.HasPrefix(gp, "a:{job:") {
		t.Fatalf("group prefix %q does not start with the key prefix and job", gp)
	}
	// The two stores registered the job under their prefixes with two
	// ids, and each key hash's name starts with its store's id.
	ids, err := a.client.HGetAll(ctx, registryKey).Result()
	na, nb := namesOf(t, a, "job"), namesOf(t, b, "job")
	if want := map[string]string{"a\x00job": na.id, "#" + na.id: "a\x00job", "joinery\x00job": nb.id, "#" + nb.id: "joinery\x00job"}; err != nil || na.id == nb.id || !maps.Equal(ids, want) {
		t.Fatalf("registry %s = %q, %v; want %q", registryKey, ids, err, want)
	}
	hk := na.keyHash("k")
	if !strings.HasPrefix(hk, "{"+na.id) || !strings.HasSuffix(hk, "}k") {
		t.Fatalf("key hash %q, want {%s<letters>}k", hk, na.id)
	}
	n, err := a.client.Exists(ctx, hk, gp+"timers").Result()
	if err != nil || n != 2 {
		t.Fatalf("EXISTS of the documented keys = %d, %v; want 2", n, err)
	}
	if f, err := a.client.HKeys(ctx, hk).Result(); err != nil || !slices.Equal(slices.Sorted(slices.Values(f)), []string{"_b", "_e"}) {
		t.Fatalf("HKEYS %s = %q, %v; want _b, _e", hk, f, err)
	}
	if z, err := a.client.ZScore(ctx, gp+"timers", "k").Result(); err != nil || z != 5 {
		t.Fatalf("ZSCORE %stimers k = %v, %v; want 5", gp, z, err)
	}
}

func TestStoreRedisLayout(t *testing.T) {
	// The tag escapes the job name and ends in the group and the suffix
	// the search picked.
	for _, tc := range []struct{ job, start string }{
		{"job", "joinery:{job:7:"},
		{"", "joinery:{:7:"},
		{"%", "joinery:{%25:7:"},
		{"a}b{c", "joinery:{a%7Db%7Bc:7:"},
		{"работа", "joinery:{работа:7:"},
		{"j:1", "joinery:{j:1:7:"},
	} {
		gp := layoutOf("joinery", tc.job).prefixes[7]
		if !strings.HasPrefix(gp, tc.start) || !strings.HasSuffix(gp, "}:") {
			t.Errorf("group 7 prefix of job %q = %q, want %s<n>}:", tc.job, gp, tc.start)
		}
	}
	gp := layoutOf("joinery", "job").keyPrefix("k:{x}")
	for _, tc := range []struct{ got, want string }{
		{keyHash2(gp, "k:{x}"), gp + "k:k:{x}"},
		{outboxHash2(gp, "k:{x}"), gp + "o:k:{x}"},
		{stateKey1(gp, "k:{x}"), gp + "state:k:{x}"},
		{epochKey1(gp, "k:{x}"), gp + "epoch:k:{x}"},
		{partsKey1(gp, "k:{x}"), gp + "parts:k:{x}"},
		{keysKey1(gp), gp + "keys"},
		{offsetsKey(gp), gp + "offsets"},
		{timersKey(gp), gp + "timers"},
		{wmKey("joinery", "job"), layoutOf("joinery", "job").prefixes[0] + "wm"},
	} {
		if tc.got != tc.want {
			t.Errorf("key %q, want %q", tc.got, tc.want)
		}
	}
	if gp != layoutOf("joinery", "job").prefixes[groupOf("k:{x}")] {
		t.Errorf("keyPrefix is not the prefix of the key's group")
	}
	// Redis Cluster's own check value of CRC16 (cluster spec, appendix A).
	if got := crc16("123456789"); got != 0x31C3 {
		t.Errorf("crc16(123456789) = %#x, want 0x31c3", got)
	}
}

// namesOf returns job's names in s, registering the job.
func namesOf(t *testing.T, s *Store, job string) *jobNames {
	t.Helper()
	n, err := s.names(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLayoutShortTags: for 200 job ids, every group's short tag is
// "{<id><letters>}", in the slot of the group's prefix, with at most four
// letters after the id and mostly three or fewer; no two groups share one.
func TestLayoutShortTags(t *testing.T) {
	l := layoutOf("joinery", "users-domains")
	long := 0
	for i := range 200 {
		k := i * 13 % idSpace
		id := string([]byte{tagLetters[k/len(tagLetters)], tagLetters[k%len(tagLetters)]})
		tags, ok := shortTags(l, id)
		if !ok {
			t.Fatalf("id %s: a group without a short tag", id)
		}
		seen := map[string]bool{}
		for g, tag := range tags {
			gp := l.prefixes[g]
			want := crc16(gp[strings.IndexByte(gp, '{')+1:strings.IndexByte(gp, '}')]) % clusterSlots
			letters, ok := strings.CutPrefix(tag[1:len(tag)-1], id)
			if tag[0] != '{' || tag[len(tag)-1] != '}' || !ok || len(letters) == 0 || len(letters) > maxTagLetters ||
				strings.Trim(letters, tagLetters) != "" || seen[tag] {
				t.Fatalf("id %s group %d: short tag %q", id, g, tag)
			}
			seen[tag] = true
			if got := crc16(tag[1:len(tag)-1]) % clusterSlots; got != want {
				t.Fatalf("id %s group %d: short tag %q in slot %d, the group's prefix %q in %d", id, g, tag, got, gp, want)
			}
			if len(letters) == maxTagLetters {
				long++
			}
		}
	}
	if long > 200*groups/100 {
		t.Errorf("%d of %d short tags have %d letters", long, 200*groups, maxTagLetters)
	}
}

// TestStoreRedisRegistry: a job's id is its home id unless another job
// took it, then the next free one; an entry never changes; ids are unique
// across prefixes.
func TestStoreRedisRegistry(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	s := newStore(t, r.Addr)
	idAt := func(k int) string {
		k %= idSpace
		return string([]byte{tagLetters[k/len(tagLetters)], tagLetters[k%len(tagLetters)]})
	}
	a := namesOf(t, s, "a")
	if want := idAt(homeID("joinery", "a")); a.id != want || a.legacy {
		t.Fatalf("job a: id %q, mark %t; want its home id %q", a.id, a.legacy, want)
	}
	// A job whose home id is taken gets the next free one: claim the home
	// id of job b and the one after it for other jobs first.
	home := homeID("joinery", "b")
	for _, k := range []int{home, home + 1} {
		if err := s.client.HSet(ctx, registryKey, "#"+idAt(k), "x\x00other").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if b := namesOf(t, s, "b"); b.id != idAt(home+2) {
		t.Fatalf("job b: id %q; want %q (its home id and the next taken)", b.id, idAt(home+2))
	}
	// The same job under another prefix is another job.
	p, err := New(ctx, Config{Options: s.cfg.Options, KeyPrefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if pa := namesOf(t, p, "a"); pa.id == a.id && homeID("p", "a") != homeID("joinery", "a") {
		t.Fatalf("job a under prefix p has job a's id %q", pa.id)
	}
	// A second store handle reads the entries as they are.
	s2 := newStore(t, r.Addr)
	if got := namesOf(t, s2, "b"); got.id != idAt(home+2) {
		t.Fatalf("job b read again: id %q, want %q", got.id, idAt(home+2))
	}
	// A bad entry is refused, naming the job.
	if err := s.client.HSet(ctx, registryKey, "joinery\x00bad", "x1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.names(ctx, "bad"); err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("names of a job with a bad entry = %v", err)
	}
}

// TestLayoutTagSearch: for job names of every shape, each group's tag lands
// in its slot window, found within a small fraction of maxTagSearch.
func TestLayoutTagSearch(t *testing.T) {
	for _, job := range []string{"", "job", "users-domains", "{", "}", "%", strings.Repeat("long job name ", 20), "работа", "\x00"} {
		for g := range groups {
			tag := groupTag(job, g)
			if slot := int(crc16(tag) % clusterSlots); slot/groupWidth != g {
				t.Fatalf("job %q group %d: tag %q hashes to slot %d, window [%d, %d)", job, g, tag, slot, g*groupWidth, (g+1)*groupWidth)
			}
			n, err := strconv.Atoi(tag[strings.LastIndex(tag, ":")+1:])
			if err != nil || n > maxTagSearch/16 {
				t.Fatalf("job %q group %d: tag %q, suffix %d", job, g, tag, n)
			}
		}
	}
}

func TestStoreRedisConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	if err := (Config{Options: redisopts.Options{Addr: "localhost:6379"}}).Validate(); err != nil {
		t.Fatalf("minimal config: %v", err)
	}
	err := Config{Options: redisopts.Options{Addr: "no-port", DB: -1}, KeyPrefix: "x{y}"}.Validate()
	if err == nil {
		t.Fatal("bad config validated")
	}
	for _, field := range []string{"Config.Addr", "Config.DB", "Config.KeyPrefix"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("Validate() = %q does not name %s", err, field)
		}
	}
	if err := (Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "Config.Addr") {
		t.Errorf("empty config: Validate() = %v", err)
	}
	if _, err := New(context.Background(), Config{}); err == nil {
		t.Error("New with an empty config succeeded")
	}
	if s := (Config{Options: redisopts.Options{Addr: "h:1", Password: "secret"}}).String(); strings.Contains(s, "secret") {
		t.Errorf("String() leaks the password: %s", s)
	}
}

func TestStoreRedisUnreachable(t *testing.T) {
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(testutil.FreePort(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := New(ctx, Config{Options: redisopts.Options{Addr: addr}})
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("New on a closed port = %v, want an error naming %s", err, addr)
	}
}

// TestStoreRedisUnresponsive points New at a server that accepts
// connections and never answers: the context deadline must end the wait.
func TestStoreRedisUnresponsive(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	conns.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		conns.Wait()
		mu.Lock()
		for _, c := range open {
			_ = c.Close()
		}
		mu.Unlock()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = New(ctx, Config{Options: redisopts.Options{Addr: l.Addr().String()}})
	if err == nil {
		t.Fatal("New against a silent server succeeded")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("New took %v with a 300ms deadline", d)
	}
}

// countingHook counts what go-redis hands to the network: single commands
// (by name) and pipelines (a transaction pipeline, MULTI and EXEC included,
// is one). The handshake of a new connection (HELLO, CLIENT SETINFO) also
// passes through hooks; it is not the store's doing and is not counted.
type countingHook struct {
	pipelines, pipelinedCmds atomic.Int64
	mu                       sync.Mutex
	process                  []string
}

func handshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select":
		return true
	}
	return false
}

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !handshake(cmd) {
			h.mu.Lock()
			h.process = append(h.process, cmd.Name())
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && !handshake(cmds[0]) {
			h.pipelines.Add(1)
			h.pipelinedCmds.Add(int64(len(cmds)))
		}
		return next(ctx, cmds)
	}
}

// sent returns and resets what the hook saw.
func (h *countingHook) sent() (process []string, pipelines int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	process, h.process = h.process, nil
	return process, h.pipelines.Swap(0)
}

// TestStoreRedisSaveOneRoundTrip checks, on the client and on one server,
// that a 1000-snapshot batch, fenced snapshots and timers included, is one
// script call: EVALSHA, plus one EVAL the first time the server lacks the
// script (the keys of many slot groups in one call is fine off a
// cluster); and that DueTimers is one pipeline (of one ZRANGE per group).
func TestStoreRedisSaveOneRoundTrip(t *testing.T) {
	r := testutil.StartRedis(t)
	s := newStore(t, r.Addr)
	ctx := context.Background()
	const n = 1000
	batch := make([]persistence.Snapshot, n)
	for i := range batch {
		batch[i] = persistence.Snapshot{Job: "job", Key: record.Key(fmt.Sprint(i)), State: []byte("state"),
			Offsets: record.OffsetsOf(map[string]int64{"p/0": int64(i)}), HasTimer: i%4 != 3, NextTimer: int64(i%10 - 5)}
		if i%2 == 0 { // half fenced writes, half unfenced (epoch 0)
			e, err := s.Acquire(ctx, "job", batch[i].Key)
			if err != nil {
				t.Fatal(err)
			}
			batch[i].Epoch = e
		}
	}
	batch[n-1].State = nil // one delete
	h := &countingHook{}
	s.client.AddHook(h)

	// Cold: the server has not seen the script.
	if err := s.Save(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if cmds, p := h.sent(); p != 0 || !slices.Equal(cmds, []string{"evalsha", "eval"}) {
		t.Fatalf("first Save sent %d pipelines and commands %q; want EVALSHA then EVAL", p, cmds)
	}

	// Warm, with one stale snapshot: still one command.
	if _, err := s.Acquire(ctx, "job", "0"); err != nil {
		t.Fatal(err)
	}
	if err := s.client.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	h.sent()
	err := s.Save(ctx, batch)
	if fenced := persistence.Fenced(err); len(fenced) != 1 || fenced[0].Key != "0" {
		t.Fatalf("Save with key 0 re-acquired = %v, want key 0 fenced", err)
	}
	if cmds, p := h.sent(); p != 0 || !slices.Equal(cmds, []string{"evalsha"}) {
		t.Fatalf("Save(%d) sent %d pipelines and commands %q; want one EVALSHA", n, p, cmds)
	}
	info, err := s.client.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	// Of the n-2 writes (key 0 is fenced, key n-1 deletes), those with
	// i%4 == 3 (n/4-1 of them, as n-1 is one) clear the timer with ZREM,
	// the rest ZADD; the delete also runs ZREM.
	// One GET and one INCR more: the job's write generation (one server).
	// Each key's check is one HGET of its epoch field (a job that holds no
	// earlier layout looks for none). Each
	// write HSETs the base and, a whole state, checks HLEN for parts to
	// drop (there are none) and DELs its outbox hash (whose entries a
	// whole state replaces); the delete DELs the hash and the outbox hash
	// in one call (it keeps no epoch: it is unfenced).
	for cmd, want := range map[string]int{"evalsha": 1, "eval": 0, "multi": 0, "get": 1, "incr": 1,
		"hget": n, "exists": 0, "hset": n - 2, "hlen": n - 2, "del": n - 1, "set": 0, "sadd": 0, "srem": 0,
		"hdel": 0, "zadd": n - 2 - (n/4 - 1), "zrem": n / 4} {
		if got := commandCalls(info, cmd); got != want {
			t.Errorf("server saw %s called %d times, want %d", cmd, got, want)
		}
	}

	h.sent()
	due, err := s.DueTimers(ctx, "job", 0, 10)
	if err != nil || len(due) != 10 || due[0].At != -5 {
		t.Fatalf("DueTimers = %v, %v", due, err)
	}
	if cmds, p := h.sent(); p != 1 || len(cmds) != 0 {
		t.Fatalf("DueTimers sent %d pipelines and commands %q; want one pipeline", p, cmds)
	}
}

// commandCalls reads calls=N of cmdstat_<cmd> from INFO commandstats.
func commandCalls(info, cmd string) int {
	for line := range strings.SplitSeq(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls=")
		if !ok {
			continue
		}
		var n int
		fmt.Sscanf(rest, "%d", &n)
		return n
	}
	return 0
}

func saveOne(ctx context.Context, s *Store, key record.Key, state string) error {
	return s.Save(ctx, []persistence.Snapshot{{Job: "job", Key: key, State: []byte(state),
		Offsets: record.OffsetsOf(map[string]int64{"p/0": int64(len(state))})}})
}

func mustLoad(t *testing.T, s *Store, key record.Key, want string) {
	t.Helper()
	got, err := s.Load(context.Background(), "job", key)
	if err != nil {
		t.Fatalf("Load(%s): %v", key, err)
	}
	if string(got.State) != want || !slices.Equal(got.Offsets, record.Offsets{{Partition: "p/0", Offset: int64(len(want))}}) {
		t.Fatalf("Load(%s) = %q %v, want %q", key, got.State, got.Offsets, want)
	}
}

// TestStoreRedisRestart: a new Store (a restarted node) finds what an old one
// wrote; with an fsyncing AOF, so does a store after Redis itself restarts.
func TestStoreRedisRestart(t *testing.T) {
	r := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	s := newStore(t, r.Addr)
	if err := saveOne(ctx, s, "k", "before"); err != nil {
		t.Fatal(err)
	}
	if err := s.CommitOffsets(ctx, "job", map[string]int64{"p/0": 6}); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()

	s2 := newStore(t, r.Addr)
	mustLoad(t, s2, "k", "before")
	_ = s2.Close()

	r.Kill()
	r.Start()
	s3 := newStore(t, r.Addr)
	mustLoad(t, s3, "k", "before")
	if got, err := s3.CommittedOffsets(ctx, "job"); err != nil || !maps.Equal(got, map[string]int64{"p/0": 6}) {
		t.Fatalf("CommittedOffsets after redis restart = %v, %v", got, err)
	}
	if ks, err := s3.Keys(ctx, "job"); err != nil || len(ks) != 1 {
		t.Fatalf("Keys after redis restart = %v, %v", ks, err)
	}
}

// TestStoreRedisEpochRestart: owner epochs survive a kill -9 of Redis with an
// fsyncing AOF, so a restarted Redis neither hands out an epoch again nor
// lets a stale owner write.
func TestStoreRedisEpochRestart(t *testing.T) {
	r := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	s := newStore(t, r.Addr)
	var last int64
	for range 3 {
		e, err := s.Acquire(ctx, "job", "k")
		if err != nil {
			t.Fatal(err)
		}
		last = e
	}
	if err := s.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "k", State: []byte("at 3"), Epoch: last}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, "other", "k"); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()

	r.Kill()
	r.Start()
	s = newStore(t, r.Addr)
	floor := func(job string) int64 {
		l, err := s.Lineage(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		return l.Floor
	}
	for _, c := range []struct {
		job  string
		want int64
	}{{"job", 3}, {"other", 1}} {
		if e, err := s.Epoch(ctx, c.job, "k"); err != nil || e != floor(c.job)+c.want {
			t.Fatalf("Epoch(%s, k) after kill -9 = %d, %v; want floor+%d", c.job, e, err, c.want)
		}
	}
	e, err := s.Acquire(ctx, "job", "k")
	if err != nil || e != last+1 {
		t.Fatalf("Acquire after kill -9 = %d, %v; want %d", e, err, last+1)
	}
	err = s.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "k", State: []byte("stale"), Epoch: last}})
	if f := persistence.Fenced(err); len(f) != 1 || f[0].Epoch != last || f[0].Holder != e {
		t.Fatalf("stale Save after kill -9 = %v, want fenced at 3 by 4", err)
	}
	got, err := s.Load(ctx, "job", "k")
	if err != nil || string(got.State) != "at 3" {
		t.Fatalf("Load after kill -9 = %q, %v", got.State, err)
	}
}

// TestStoreRedisCorruptEpoch: an epoch field that is not a decimal fences
// every write and is reported by Epoch, never taken for 0.
func TestStoreRedisCorruptEpoch(t *testing.T) {
	s := newStore(t, testutil.StartRedis(t).Addr)
	ctx := context.Background()
	if err := s.client.HSet(ctx, namesOf(t, s, "job").keyHash("k"), epochField, "x").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Epoch(ctx, "job", "k"); err == nil {
		t.Fatal("Epoch of a non-numeric epoch field succeeded")
	}
	err := s.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "k", State: []byte("v")}})
	if err == nil || errors.Is(err, persistence.ErrFenced) {
		// The holder "x" cannot become a FencedError; Save reports it plainly.
		t.Fatalf("Save over a corrupt epoch = %v, want a non-fenced error", err)
	}
	if _, err := s.Load(ctx, "job", "k"); !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("Load after Save over a corrupt epoch = %v, want ErrNotFound", err)
	}
}

// TestStoreRedisDown: with Redis gone, calls fail within their deadline
// instead of hanging; once Redis is back (with its data: a Redis that came
// back without the writes it acknowledged went back in time, and refuses,
// see TestStoreRedisGenerations), the same Store works again.
func TestStoreRedisDown(t *testing.T) {
	r := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	s := newStore(t, r.Addr)
	if err := saveOne(context.Background(), s, "k", "up"); err != nil {
		t.Fatal(err)
	}
	r.Kill()
	for _, op := range []struct {
		name string
		call func(context.Context) error
	}{
		{"Save", func(ctx context.Context) error { return saveOne(ctx, s, "k", "down") }},
		{"Load", func(ctx context.Context) error { _, err := s.Load(ctx, "job", "k"); return err }},
		{"CommitOffsets", func(ctx context.Context) error {
			return s.CommitOffsets(ctx, "job", map[string]int64{"p/0": 1})
		}},
		{"Acquire", func(ctx context.Context) error { _, err := s.Acquire(ctx, "job", "k"); return err }},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		start := time.Now()
		err := op.call(ctx)
		cancel()
		if err == nil || errors.Is(err, persistence.ErrNotFound) {
			t.Fatalf("%s with redis down = %v, want an error", op.name, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("%s with redis down took %v despite a 500ms deadline", op.name, d)
		}
	}
	r.Start()
	testutil.WaitFor(t, 10*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return saveOne(ctx, s, "k", "back")
	})
	mustLoad(t, s, "k", "back")
}

func TestStoreRedisCorruptValue(t *testing.T) {
	s := newStore(t, testutil.StartRedis(t).Addr)
	ctx := context.Background()
	if err := s.client.HSet(ctx, namesOf(t, s, "job").keyHash("k"), baseField, "\x07future format").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, "job", "k"); !errors.Is(err, errCorrupt) {
		t.Fatalf("Load of an unknown version = %v, want errCorrupt", err)
	}
	// A field starting with one "_" that is not a reserved one is from a
	// layout this version does not know.
	if err := s.client.HSet(ctx, namesOf(t, s, "job").keyHash("k"), baseField, encodeSnapshot(nil, []byte("v")), "_x", "y").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, "job", "k"); !errors.Is(err, errCorrupt) {
		t.Fatalf("Load of an unknown field = %v, want errCorrupt", err)
	}
	if err := s.client.HSet(ctx, offsetsKey(layoutOf("joinery", "job").prefixes[groupOf("p/0")]), "p/0", "x").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommittedOffsets(ctx, "job"); err == nil {
		t.Fatal("CommittedOffsets with a non-numeric field succeeded")
	}
}

// TestStoreRedisTimersRestart: the timer index survives a kill -9 of Redis
// with an fsyncing AOF, scores exact at the ends of the range.
func TestStoreRedisTimersRestart(t *testing.T) {
	r := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	s := newStore(t, r.Addr)
	batch := []persistence.Snapshot{
		{Job: "job", Key: "max", State: []byte("v"), HasTimer: true, NextTimer: persistence.MaxTimer},
		{Job: "job", Key: "min", State: []byte("v"), HasTimer: true, NextTimer: persistence.MinTimer},
		{Job: "job", Key: "odd", State: []byte("v"), HasTimer: true, NextTimer: persistence.MaxTimer - 1},
		{Job: "job", Key: "none", State: []byte("v")},
	}
	if err := s.Save(ctx, batch); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	r.Kill()
	r.Start()
	s = newStore(t, r.Addr)
	got, err := s.DueTimers(ctx, "job", math.MaxInt64, 10)
	want := []persistence.TimerDue{{Key: "min", At: persistence.MinTimer},
		{Key: "odd", At: persistence.MaxTimer - 1}, {Key: "max", At: persistence.MaxTimer}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("DueTimers after kill -9 = %v, %v; want %v", got, err, want)
	}
}

// TestStoreRedisCorruptTimers: a timers set that Save did not write (a
// fractional or out-of-range score, a wrong type) is an error, never a
// rounded time.
func TestStoreRedisCorruptTimers(t *testing.T) {
	s := newStore(t, testutil.StartRedis(t).Addr)
	ctx := context.Background()
	for _, score := range []float64{1.5, -(1 << 60)} { // due at any upTo
		if err := s.client.ZAdd(ctx, timersKey(layoutOf("joinery", "job").keyPrefix("k")), redis.Z{Score: score, Member: "k"}).Err(); err != nil {
			t.Fatal(err)
		}
		if got, err := s.DueTimers(ctx, "job", math.MaxInt64, 10); err == nil {
			t.Fatalf("DueTimers with score %v = %v, want an error", score, got)
		}
	}
	if err := s.client.Set(ctx, timersKey(layoutOf("joinery", "other").keyPrefix("k")), "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DueTimers(ctx, "other", 0, 10); err == nil {
		t.Fatal("DueTimers over a string key succeeded")
	}
	err := s.Save(ctx, []persistence.Snapshot{{Job: "other", Key: "k", State: []byte("v"), HasTimer: true}})
	if err == nil {
		t.Fatal("Save over a timers key of the wrong type succeeded")
	}
}

// TestStoreRedisSaveAllocs bounds what a Save of 200 snapshots (a timer,
// two parts and an offset each) allocates on one server: a few buffers
// per batch and go-redis's per-call work, not something per key or
// argument (each used to be about 24 allocations, so a batch some 5,000).
func TestStoreRedisSaveAllocs(t *testing.T) {
	s := newStore(t, testutil.StartRedis(t).Addr)
	ctx := context.Background()
	const n = 200
	batch := make([]persistence.Snapshot, n)
	for i := range batch {
		batch[i] = persistence.Snapshot{Job: "job", Key: record.Key(fmt.Sprint("key-", i)), State: []byte("state"),
			Offsets: record.OffsetsOf(map[string]int64{"p/0": int64(i)}), HasTimer: true, NextTimer: int64(i),
			Parts: []persistence.Part{{Name: "a", Value: []byte("1")}, {Name: "b", Value: []byte("2")}}}
	}
	if err := s.Save(ctx, batch); err != nil { // loads the script and the layout
		t.Fatal(err)
	}
	var err error
	allocs := testing.AllocsPerRun(5, func() {
		if e := s.Save(ctx, batch); e != nil {
			err = e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Save of %d snapshots: %.0f allocations", n, allocs)
	if allocs > n/2 {
		t.Errorf("Save of %d snapshots: %.0f allocations, want at most %d", n, allocs, n/2)
	}
}
