package redisstore

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/stateparts"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// The scripts of layout version 1, as its store ran them: the save script
// (per snapshot: epoch, state, keys set, timers and parts keys) and the
// acquire script (an epoch string, INCR).
var saveScript1 = redis.NewScript(luaLess + `
local m = tonumber(ARGV[1])
local stale = {}
for j = 1, m do
  local cur = redis.call('GET', KEYS[j]) or '0'
  if less(cur, ARGV[j + 1]) then
    stale[#stale + 1] = j
    stale[#stale + 1] = cur
  end
end
if #stale > 0 then
  return {0, stale}
end
local fenced = {}
local ok = {}
local a, k, idx = m + 2, m + 1, 0
while a <= #ARGV do
  idx = idx + 1
  local cur = redis.call('GET', KEYS[k]) or '0'
  if cur == ARGV[a] then
    ok[#ok + 1] = a
    ok[#ok + 1] = k
  else
    fenced[#fenced + 1] = idx
    fenced[#fenced + 1] = cur
  end
  local nd = ARGV[a + 4]
  a = a + 5 + 2 * tonumber(ARGV[a + 3])
  if nd ~= 'W' then
    a = a + tonumber(nd)
  end
  k = k + 5
end
for o = 1, #ok, 2 do
  local a, k = ok[o], ok[o + 1]
  local sk, ks, ts, ps = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4]
  local member = string.sub(sk, #ks + 3)
  if ARGV[a + 1] == '' then
    redis.call('DEL', sk, ps)
    redis.call('SREM', ks, member)
    redis.call('ZREM', ts, member)
  else
    redis.call('SET', sk, ARGV[a + 1])
    redis.call('SADD', ks, member)
    if ARGV[a + 2] == '' then
      redis.call('ZREM', ts, member)
    else
      redis.call('ZADD', ts, ARGV[a + 2], member)
    end
    local nd = ARGV[a + 4]
    if nd == 'W' then
      redis.call('DEL', ps)
    end
    local i, j = a + 5, a + 4 + 2 * tonumber(ARGV[a + 3])
    while i <= j do
      local e = math.min(i + 399, j)
      redis.call('HSET', ps, unpack(ARGV, i, e))
      i = e + 1
    end
    if nd ~= 'W' then
      i, j = j + 1, j + tonumber(nd)
      while i <= j do
        local e = math.min(i + 399, j)
        redis.call('HDEL', ps, unpack(ARGV, i, e))
        i = e + 1
      end
    end
  end
end
local gens = {}
for j = 1, m do
  gens[j] = redis.call('INCR', KEYS[j])
end
return {1, fenced, gens}
`)

var acquireScript1 = redis.NewScript(luaLess + `
local floor = ARGV[1]
if #KEYS > 1 then
` + luaIncarnation + `
  floor = string.match(inc, ':(%d+)$') or '0'
end
local ek = KEYS[#KEYS]
local cur = redis.call('GET', ek) or '0'
if less(cur, floor) then
  redis.call('SET', ek, floor)
end
redis.call('INCR', ek)
return redis.call('GET', ek)
`)

// save1 writes sn as a store of layout version 1 did: one call of its save
// script (whole states only), with the group's generation key.
func save1(t *testing.T, s *Store, sn persistence.Snapshot) {
	t.Helper()
	l := layoutOf(s.prefix, sn.Job)
	g := groupOf(string(sn.Key))
	gp := l.prefixes[g]
	keys := []string{s.genOf(sn.Job, l, g).key, epochKey1(gp, sn.Key), stateKey1(gp, sn.Key), keysKey1(gp), timersKey(gp), partsKey1(gp, sn.Key)}
	args := []any{"1", "0", strconv.FormatInt(sn.Epoch, 10)}
	if len(sn.State) == 0 {
		args = append(args, "", "", "0", "W")
	} else {
		timer := ""
		if sn.HasTimer {
			timer = strconv.FormatInt(sn.NextTimer, 10)
		}
		args = append(args, encodeSnapshot(sn.Offsets, sn.State), timer, strconv.Itoa(len(sn.Parts)), "W")
		for _, p := range sn.Parts {
			args = append(args, p.Name, p.Value)
		}
	}
	res, err := saveScript1.Run(context.Background(), s.client, keys, args...).Slice()
	if err != nil || len(res) != 3 || len(res[1].([]any)) != 0 {
		t.Fatalf("layout-1 save of %q: %v, %v", sn.Key, res, err)
	}
}

// acquire1 acquires key as a store of layout version 1 did.
func acquire1(t *testing.T, s *Store, job string, key record.Key) int64 {
	t.Helper()
	ctx := context.Background()
	l := layoutOf(s.prefix, job)
	keys := []string{incarnationKey(l), epochKey1(l.keyPrefix(key), key)}
	arg := candidate()
	if s.cluster { // the floor, read as layout 1 did (Lineage would register the job)
		v, err := lineageScript.Run(ctx, s.client, []string{incarnationKey(l), seqKey(l)}, candidate()).Result()
		r, ok := replyPair(v, 2)
		if err != nil || !ok {
			t.Fatal(v, err)
		}
		lin, err := parseLineage(job, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		keys, arg = keys[1:], strconv.FormatInt(lin.Floor, 10)
	}
	v, err := acquireScript1.Run(ctx, s.client, keys, arg).Text()
	if err != nil {
		t.Fatal(err)
	}
	e, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestStoreRedisMigration(t *testing.T) {
	testMigration(t, newStore(t, testutil.StartRedis(t).Addr))
}

func TestStoreClusterMigration(t *testing.T) {
	testMigration(t, newClusterStore(t, testutil.StartRedisCluster(t, 3), "joinery"))
}

// testMigration writes keys with layout version 1's scripts and reads,
// acquires and saves them with this version: each key is moved into its
// hash on first access, with the same state, offsets and timer, and its
// epoch goes on from the layout-1 one.
func testMigration(t *testing.T, s *Store) {
	ctx := context.Background()
	const job = "job"
	offs := record.OffsetsOf(map[string]int64{"p/0": 7, "p/1": 9})
	parts := []persistence.Part{{Name: "l", Value: []byte("left row")}, {Name: "r:1", Value: []byte("right 1")},
		{Name: "_x", Value: []byte("a name with the escape")}, {Name: "__", Value: []byte("two")}}
	want := map[record.Key]persistence.Snapshot{}
	epochs := map[record.Key]int64{}
	for _, k := range []record.Key{"a", "b", "c", "d", "e", "f"} {
		sn := persistence.Snapshot{Job: job, Key: k, State: []byte("base of " + string(k)), Offsets: offs}
		switch k {
		case "a", "e": // acquired, in parts, with a timer
			epochs[k] = acquire1(t, s, job, k)
			acquire1(t, s, job, k)
			epochs[k] = acquire1(t, s, job, k)
			sn.Epoch, sn.Parts, sn.HasTimer, sn.NextTimer = epochs[k], parts, true, 42
		case "c": // acquired, then deleted: an epoch only
			epochs[k] = acquire1(t, s, job, k)
			sn.Epoch = epochs[k]
			save1(t, s, sn)
			sn.State = nil
		case "f": // acquired, never saved
			epochs[k] = acquire1(t, s, job, k)
			continue
		}
		save1(t, s, sn)
		if len(sn.State) > 0 {
			want[k] = sn
		}
	}
	wantState := func(k record.Key) []byte {
		sn := want[k]
		if len(sn.Parts) == 0 {
			return sn.State
		}
		return stateparts.Pack(sn.State, sn.Parts)
	}
	check := func(k record.Key, got persistence.Snapshot) {
		t.Helper()
		if !slices.Equal(got.State, wantState(k)) || !slices.Equal(got.Offsets, offs) {
			t.Fatalf("key %q: state %q, offsets %v; want %q, %v", k, got.State, got.Offsets, wantState(k), offs)
		}
	}
	moved := func(k record.Key, fields ...string) {
		t.Helper()
		gp := layoutOf(s.prefix, job).keyPrefix(k)
		if n, err := s.client.Exists(ctx, stateKey1(gp, k), partsKey1(gp, k), epochKey1(gp, k)).Result(); err != nil || n != 0 {
			t.Fatalf("key %q: %d layout-1 keys left, %v", k, n, err)
		}
		if in, err := s.client.SIsMember(ctx, keysKey1(gp), string(k)).Result(); err != nil || in {
			t.Fatalf("key %q: still in the layout-1 keys set (%v)", k, err)
		}
		got, err := s.client.HKeys(ctx, namesOf(t, s, job).keyHash(k)).Result()
		slices.Sort(got)
		slices.Sort(fields)
		if err != nil || !slices.Equal(got, fields) {
			t.Fatalf("key %q: hash fields %q, %v; want %q", k, got, err, fields)
		}
	}
	partFields := []string{"l", "1", "__x", "___"} // fieldOf

	// Before any access: Keys and Epoch read layout 1 without moving it.
	ks, err := s.Keys(ctx, job)
	slices.Sort(ks)
	if err != nil || !slices.Equal(ks, []record.Key{"a", "b", "d", "e"}) {
		t.Fatalf("Keys before migration = %q, %v", ks, err)
	}
	if e, err := s.Epoch(ctx, job, "a"); err != nil || e != epochs["a"] {
		t.Fatalf("Epoch(a) = %d, %v; want %d", e, err, epochs["a"])
	}
	if due, err := s.DueTimers(ctx, job, 100, 10); err != nil || len(due) != 2 || due[0].Key != "a" || due[1].Key != "e" {
		t.Fatalf("DueTimers = %v, %v", due, err)
	}

	// Load moves a key as it is; its epoch stays.
	got, err := s.Load(ctx, job, "a")
	if err != nil {
		t.Fatal(err)
	}
	check("a", got)
	moved("a", append([]string{epochField, baseField}, partFields...)...)
	if e, err := s.Epoch(ctx, job, "a"); err != nil || e != epochs["a"] {
		t.Fatalf("Epoch(a) after Load = %d, %v; want %d", e, err, epochs["a"])
	}
	// Acquire goes on from the moved epoch; the old owner is fenced.
	e, err := s.Acquire(ctx, job, "a")
	if err != nil || e != epochs["a"]+1 {
		t.Fatalf("Acquire(a) = %d, %v; want %d", e, err, epochs["a"]+1)
	}
	err = s.Save(ctx, []persistence.Snapshot{{Job: job, Key: "a", State: []byte("stale"), Epoch: epochs["a"]}})
	if f := persistence.Fenced(err); len(f) != 1 || f[0].Holder != e {
		t.Fatalf("Save by the layout-1 owner = %v, want fenced by %d", err, e)
	}
	if err := s.Save(ctx, []persistence.Snapshot{{Job: job, Key: "a", State: []byte("new"), Epoch: e, Delta: true,
		Parts: []persistence.Part{{Name: "r:1"}, {Name: "_x", Value: []byte("changed")}}}}); err != nil {
		t.Fatal(err)
	}
	got, err = s.Load(ctx, job, "a")
	if err != nil || !slices.Equal(got.State, stateparts.Pack([]byte("new"), []persistence.Part{parts[0],
		{Name: "_x", Value: []byte("changed")}, parts[3]})) {
		t.Fatalf("Load(a) after a delta = %q, %v", got.State, err)
	}

	// Acquire moves a key too: epoch + 1, state as it was.
	if e, err := s.Acquire(ctx, job, "e"); err != nil || e != epochs["e"]+1 {
		t.Fatalf("Acquire(e) = %d, %v; want %d", e, err, epochs["e"]+1)
	}
	moved("e", append([]string{epochField, baseField}, partFields...)...)
	got, err = s.Load(ctx, job, "e")
	if err != nil {
		t.Fatal(err)
	}
	check("e", got)
	// A deleted key keeps its epoch; so does one acquired and never saved.
	for _, k := range []record.Key{"c", "f"} {
		es, snaps, err := s.AcquireLoadMany(ctx, job, []record.Key{k})
		if err != nil || es[0] != epochs[k]+1 || len(snaps[0].State) != 0 {
			t.Fatalf("AcquireLoadMany(%s) = %v, %v, %v; want epoch %d, no state", k, es, snaps, err, epochs[k]+1)
		}
		moved(k, epochField)
	}
	// An unfenced key: LoadMany moves it (no epoch), Acquire then starts
	// at the floor.
	snaps, err := s.LoadMany(ctx, job, []record.Key{"b", "missing"})
	if err != nil || len(snaps[1].State) != 0 {
		t.Fatalf("LoadMany(b, missing) = %v, %v", snaps, err)
	}
	check("b", snaps[0])
	moved("b", baseField)
	if e, err := s.Acquire(ctx, job, "b"); err != nil || e <= 0 {
		t.Fatalf("Acquire(b) = %d, %v", e, err)
	}
	moved("b", epochField, baseField)
	// A Save that comes first moves the key before it applies: a delta
	// onto the layout-1 state.
	if err := s.Save(ctx, []persistence.Snapshot{{Job: job, Key: "d", State: []byte("d2"), Delta: true,
		Parts: []persistence.Part{{Name: "n", Value: []byte("v")}}}}); err != nil {
		t.Fatal(err)
	}
	moved("d", baseField, "n")
	got, err = s.Load(ctx, job, "d")
	if err != nil || !slices.Equal(got.State, stateparts.Pack([]byte("d2"), []persistence.Part{{Name: "n", Value: []byte("v")}})) {
		t.Fatalf("Load(d) after a delta = %q, %v", got.State, err)
	}

	ks, err = s.Keys(ctx, job)
	slices.Sort(ks)
	if err != nil || !slices.Equal(ks, []record.Key{"a", "b", "d", "e"}) {
		t.Fatalf("Keys after migration = %q, %v", ks, err)
	}
	if due, err := s.DueTimers(ctx, job, 100, 10); err != nil || len(due) != 1 || due[0].Key != "e" {
		t.Fatalf("DueTimers after migration = %v, %v (a's delta has no timer)", due, err)
	}
	// Nothing of layout 1 is left: every group's keys set went with its
	// last member.
	var (
		mu   sync.Mutex
		left []string
	)
	err = forEachServer(ctx, s, func(c *redis.Client) error {
		names, err := c.Keys(ctx, "*:keys").Result()
		mu.Lock()
		left = append(left, names...)
		mu.Unlock()
		return err
	})
	if err != nil || len(left) != 0 {
		t.Fatalf("layout-1 keys sets left: %q, %v", left, err)
	}
}

// forEachServer calls f with the client of the store's server, or of
// each master of its cluster (concurrently).
func forEachServer(ctx context.Context, s *Store, f func(*redis.Client) error) error {
	if cc, ok := s.client.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error { return f(c) })
	}
	return f(s.client.(*redis.Client))
}

// TestStoreRedisReservedPartNames: parts named like the reserved fields,
// or starting with the escape, are stored apart from them and read back
// as they were; the epoch is untouched by them.
func TestStoreRedisReservedPartNames(t *testing.T) {
	s := newStore(t, testutil.StartRedis(t).Addr)
	ctx := context.Background()
	e, err := s.Acquire(ctx, "job", "k")
	if err != nil {
		t.Fatal(err)
	}
	parts := []persistence.Part{{Name: "_e", Value: []byte("1")}, {Name: "_b", Value: []byte("b")},
		{Name: "_", Value: []byte("u")}, {Name: "__e", Value: []byte("x")}, {Name: "e", Value: []byte("y")}}
	if err := s.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "k", State: []byte("base"), Epoch: e, Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	fields, err := s.client.HKeys(ctx, namesOf(t, s, "job").keyHash("k")).Result()
	slices.Sort(fields)
	if want := []string{"__", "___e", "__b", "__e", "_b", "_e", "e"}; err != nil || !slices.Equal(fields, want) {
		t.Fatalf("hash fields %q, %v; want %q", fields, err, want)
	}
	got, err := s.Load(ctx, "job", "k")
	if err != nil || !slices.Equal(got.State, stateparts.Pack([]byte("base"), parts)) {
		t.Fatalf("Load = %q, %v", got.State, err)
	}
	if err := s.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "k", State: []byte("base2"), Epoch: e, Delta: true,
		Parts: []persistence.Part{{Name: "_e"}, {Name: "_b"}}}}); err != nil {
		t.Fatal(err)
	}
	got, err = s.Load(ctx, "job", "k")
	if err != nil || !slices.Equal(got.State, stateparts.Pack([]byte("base2"), parts[2:])) {
		t.Fatalf("Load after deleting parts _e and _b = %q, %v", got.State, err)
	}
	if got, err := s.Epoch(ctx, "job", "k"); err != nil || got != e {
		t.Fatalf("Epoch = %d, %v; want %d", got, err, e)
	}
	if next, err := s.Acquire(ctx, "job", "k"); err != nil || next != e+1 {
		t.Fatalf("Acquire = %d, %v; want %d", next, err, e+1)
	}
}

// TestStoreRedisOutboxHash: parts named o:… (the key core's outbox
// entries) live in the key's outbox hash, so a large one leaves the key
// hash in Redis's compact listpack encoding; Load reads both; deleting the
// last entry removes the outbox hash; a whole state replaces the entries;
// an entry a layout-1 key kept in its hash is deleted from there too.
func TestStoreRedisOutboxHash(t *testing.T) {
	s := newStore(t, testutil.StartRedis(t).Addr)
	ctx := context.Background()
	e, err := s.Acquire(ctx, "job", "k")
	if err != nil {
		t.Fatal(err)
	}
	names := namesOf(t, s, "job")
	hk, ok := names.keyHash("k"), names.outboxHash("k")
	big := []byte(strings.Repeat("x", 300))
	rows := []persistence.Part{{Name: "l", Value: []byte("left row")}, {Name: "r:1", Value: []byte("right row")}}
	entry := persistence.Part{Name: "o:0000000000000001", Value: big}
	save := func(sn persistence.Snapshot) {
		t.Helper()
		sn.Job, sn.Key, sn.Epoch = "job", "k", e
		if err := s.Save(ctx, []persistence.Snapshot{sn}); err != nil {
			t.Fatal(err)
		}
	}
	load := func(want []persistence.Part) {
		t.Helper()
		got, err := s.Load(ctx, "job", "k")
		if err != nil {
			t.Fatal(err)
		}
		_, ps, err := stateparts.Unpack(got.State)
		if err != nil {
			t.Fatal(err)
		}
		name := func(a, b persistence.Part) int { return strings.Compare(a.Name, b.Name) }
		slices.SortFunc(ps, name)
		want = slices.Clone(want)
		slices.SortFunc(want, name)
		if len(ps) != len(want) {
			t.Fatalf("loaded parts %v, want %v", ps, want)
		}
		for i := range ps {
			if ps[i].Name != want[i].Name || string(ps[i].Value) != string(want[i].Value) {
				t.Fatalf("loaded parts %v, want %v", ps, want)
			}
		}
	}
	save(persistence.Snapshot{State: []byte("base"), Parts: append(slices.Clone(rows), entry)})
	if fields, _ := s.client.HKeys(ctx, hk).Result(); slices.Contains(fields, entry.Name) {
		t.Fatalf("key hash fields %q hold the outbox entry", fields)
	}
	if enc, err := s.client.ObjectEncoding(ctx, hk).Result(); err != nil || enc != "listpack" {
		t.Fatalf("key hash encoding %q, %v; want listpack", enc, err)
	}
	if n, _ := s.client.HLen(ctx, ok).Result(); n != 1 {
		t.Fatalf("outbox hash holds %d fields, want 1", n)
	}
	load(append(slices.Clone(rows), entry))

	// A delta deleting the entry: the outbox hash goes.
	save(persistence.Snapshot{State: []byte("base"), Delta: true, Parts: []persistence.Part{{Name: entry.Name}}})
	if n, _ := s.client.Exists(ctx, ok).Result(); n != 0 {
		t.Fatal("the outbox hash outlived its last entry")
	}
	load(rows)

	// A whole state replaces the entries.
	second := persistence.Part{Name: "o:0000000000000002", Value: []byte("two")}
	save(persistence.Snapshot{State: []byte("base"), Delta: true, Parts: []persistence.Part{entry}})
	save(persistence.Snapshot{State: []byte("base"), Parts: append(slices.Clone(rows), second)})
	load(append(slices.Clone(rows), second))

	// An entry in the key hash (as a key moved from layout 1 keeps it)
	// is deleted by a delta too.
	if err := s.client.HSet(ctx, hk, entry.Name, "old").Err(); err != nil {
		t.Fatal(err)
	}
	load(append(slices.Clone(rows), second, persistence.Part{Name: entry.Name, Value: []byte("old")}))
	save(persistence.Snapshot{State: []byte("base"), Delta: true, Parts: []persistence.Part{{Name: entry.Name}, {Name: second.Name}}})
	load(rows)
	if n, _ := s.client.Exists(ctx, ok).Result(); n != 0 {
		t.Fatal("the outbox hash outlived its last entry")
	}

	// Deleting the key deletes both hashes; the epoch stays.
	save(persistence.Snapshot{State: []byte("base"), Delta: true, Parts: []persistence.Part{entry}})
	save(persistence.Snapshot{})
	if n, _ := s.client.Exists(ctx, ok).Result(); n != 0 {
		t.Fatal("a deleted key's outbox hash is still there")
	}
	if got, err := s.Epoch(ctx, "job", "k"); err != nil || got != e {
		t.Fatalf("Epoch = %d, %v; want %d", got, err, e)
	}
}

func TestStoreRedisMigration2(t *testing.T) {
	testMigration2(t, newStore(t, testutil.StartRedis(t).Addr))
}

func TestStoreClusterMigration2(t *testing.T) {
	testMigration2(t, newClusterStore(t, testutil.StartRedisCluster(t, 3), "joinery"))
}

// testMigration2 writes keys as a store of layout version 2 held them (a
// hash per key under its group prefix, the outbox entries in a hash
// beside it, the job's incarnation) and reads, acquires and saves them
// with this version: the job is registered as holding an earlier layout,
// and each key is renamed to its layout-3 names on first access, with the
// same state, outbox, epoch and timer; a key of a job registered before it
// had an incarnation is never looked for in layout 2.
func testMigration2(t *testing.T, s *Store) {
	ctx := context.Background()
	const job = "job"
	l := layoutOf(s.prefix, job)
	if _, err := lineageScript.Run(ctx, s.client, []string{incarnationKey(l), seqKey(l)}, candidate()).Result(); err != nil {
		t.Fatal(err)
	}
	offs := record.OffsetsOf(map[string]int64{"p/0": 7})
	entry := persistence.Part{Name: "o:0000000000000001", Value: []byte(strings.Repeat("x", 100))}
	// Layout 2 stored every part under its name: a right row's "r:1", a
	// part named "7" as "7".
	rows := []persistence.Part{{Name: "l", Value: []byte("left")}, {Name: "r:1", Value: []byte("right")},
		{Name: "7", Value: []byte("an integer's name")}}
	for i, k := range []record.Key{"a", "b", "c"} {
		gp := l.keyPrefix(k)
		f := []any{epochField, strconv.Itoa(10 + i), baseField, encodeSnapshot(offs, []byte("base of "+string(k)))}
		for _, p := range rows {
			f = append(f, p.Name, p.Value)
		}
		if err := s.client.HSet(ctx, keyHash2(gp, k), f...).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.client.HSet(ctx, outboxHash2(gp, k), entry.Name, entry.Value).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.client.ZAdd(ctx, timersKey(gp), redis.Z{Score: float64(40 + i), Member: string(k)}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	names := namesOf(t, s, job)
	if !names.legacy {
		t.Fatal("a job with an incarnation registered without the earlier-layout mark")
	}
	want := func(k record.Key) []byte {
		return stateparts.Pack([]byte("base of "+string(k)), append(slices.Clone(rows), entry))
	}
	moved := func(k record.Key) {
		t.Helper()
		gp := l.keyPrefix(k)
		if n, err := s.client.Exists(ctx, keyHash2(gp, k), outboxHash2(gp, k)).Result(); err != nil || n != 0 {
			t.Fatalf("key %q: %d layout-2 keys left, %v", k, n, err)
		}
		if n, err := s.client.Exists(ctx, names.keyHash(k), names.outboxHash(k)).Result(); err != nil || n != 2 {
			t.Fatalf("key %q: %d of its hash and outbox hash, %v", k, n, err)
		}
		f, err := s.client.HKeys(ctx, names.keyHash(k)).Result()
		slices.Sort(f)
		if want := []string{"1", "_=7", "_b", "_e", "l"}; err != nil || !slices.Equal(f, want) {
			t.Fatalf("key %q: fields %q, %v; want %q", k, f, err, want)
		}
	}
	// Before any access: Keys and Epoch read layout 2 without moving it.
	ks, err := s.Keys(ctx, job)
	if slices.Sort(ks); err != nil || !slices.Equal(ks, []record.Key{"a", "b", "c"}) {
		t.Fatalf("Keys before migration = %q, %v", ks, err)
	}
	if e, err := s.Epoch(ctx, job, "b"); err != nil || e != 11 {
		t.Fatalf("Epoch(b) = %d, %v; want 11", e, err)
	}
	// Load moves a key whole.
	got, err := s.Load(ctx, job, "a")
	if err != nil || !slices.Equal(got.State, want("a")) || !slices.Equal(got.Offsets, offs) {
		t.Fatalf("Load(a) = %q, %v, %v", got.State, got.Offsets, err)
	}
	moved("a")
	// Acquire goes on above the layout-2 epoch (and the incarnation's
	// floor), and fences the layout-2 owner.
	e, err := s.Acquire(ctx, job, "b")
	if err != nil || e <= 11 {
		t.Fatalf("Acquire(b) = %d, %v; want above 11", e, err)
	}
	err = s.Save(ctx, []persistence.Snapshot{{Job: job, Key: "b", State: []byte("stale"), Epoch: 11}})
	if f := persistence.Fenced(err); len(f) != 1 || f[0].Holder != e {
		t.Fatalf("Save by the layout-2 owner = %v, want fenced by %d", err, e)
	}
	moved("b")
	// A Save that comes first moves the key, then applies its delta.
	if err := s.Save(ctx, []persistence.Snapshot{{Job: job, Key: "c", State: []byte("c2"), Epoch: 12, Delta: true,
		HasTimer: true, NextTimer: 50, Parts: []persistence.Part{{Name: "r:1"}, {Name: entry.Name}}}}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.client.Exists(ctx, keyHash2(l.keyPrefix("c"), "c"), outboxHash2(l.keyPrefix("c"), "c"), names.outboxHash("c")).Result(); err != nil || n != 0 {
		t.Fatalf("key c: %d layout-2 keys or an emptied outbox left, %v", n, err)
	}
	got, err = s.Load(ctx, job, "c")
	if err != nil || !slices.Equal(got.State, stateparts.Pack([]byte("c2"), []persistence.Part{rows[0], rows[2]})) {
		t.Fatalf("Load(c) after a delta = %q, %v", got.State, err)
	}
	ks, err = s.Keys(ctx, job)
	if slices.Sort(ks); err != nil || !slices.Equal(ks, []record.Key{"a", "b", "c"}) {
		t.Fatalf("Keys after migration = %q, %v", ks, err)
	}
	if due, err := s.DueTimers(ctx, job, 100, 10); err != nil || len(due) != 3 || due[2].Key != "c" || due[2].At != 50 {
		t.Fatalf("DueTimers after migration = %v, %v", due, err)
	}

	// A job registered before its incarnation existed holds no earlier
	// layout: its keys are looked for under their layout-3 names only.
	fresh := namesOf(t, s, "fresh")
	if fresh.legacy || fresh.id == names.id {
		t.Fatalf("job fresh: id %s, earlier-layout mark %t (job's id %s)", fresh.id, fresh.legacy, names.id)
	}
	if _, err := s.Lineage(ctx, "fresh"); err != nil {
		t.Fatal(err)
	}
	gp := layoutOf(s.prefix, "fresh").keyPrefix("k")
	if err := s.client.HSet(ctx, keyHash2(gp, "k"), epochField, "5", baseField, encodeSnapshot(nil, []byte("v"))).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, "fresh", "k"); !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("Load of a layout-2 name in a job without the mark = %v, want ErrNotFound", err)
	}
}

// TestFieldOf: a part's hash field and back, for the names the key core
// writes and for names that need an escape; a right row's integer key is
// the field itself (Redis stores it as an integer), and no two names
// share a field.
func TestFieldOf(t *testing.T) {
	for _, tc := range []struct{ name, field string }{
		{"l", "l"},
		{"r:112308", "112308"},
		{"r:-5", "-5"},
		{"r:0", "0"},
		{"r:9223372036854775807", "9223372036854775807"},
		{"r:-9223372036854775808", "-9223372036854775808"},
		{"r:9223372036854775808", "r:9223372036854775808"}, // beyond int64
		{"r:007", "r:007"},
		{"r:-0", "r:-0"},
		{"r:+1", "r:+1"},
		{"r:", "r:"},
		{"r:abc", "r:abc"},
		{"7", "_=7"},
		{"-7", "_=-7"},
		{"07", "07"},
		{"_e", "__e"},
		{"_=7", "__=7"},
		{"o:0000000000000001", "o:0000000000000001"},
		{"l:12", "l:12"},
		{"s:3", "s:3"},
	} {
		if got := fieldOf(tc.name); got != tc.field {
			t.Errorf("fieldOf(%q) = %q, want %q", tc.name, got, tc.field)
		}
		if back, ok := partOf(tc.field); !ok || back != tc.name {
			t.Errorf("partOf(%q) = %q, %t; want %q", tc.field, back, ok, tc.name)
		}
	}
	for _, f := range []string{"_b", "_e", "_x", "_=07", "_=", "_"} {
		if p, ok := partOf(f); ok {
			t.Errorf("partOf(%q) = %q, a part; want a reserved field", f, p)
		}
	}
}

func FuzzFieldOf(f *testing.F) {
	for _, s := range []string{"r:1", "1", "_=1", "__", "r:-0", "l", "r:99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		field := fieldOf(name)
		if back, ok := partOf(field); !ok || back != name {
			t.Fatalf("partOf(fieldOf(%q) = %q) = %q, %t", name, field, back, ok)
		}
		if field == epochField || field == baseField {
			t.Fatalf("fieldOf(%q) is a reserved field", name)
		}
	})
}
