package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/persistence/storetest"
	"github.com/joinery/joinery/record"
)

func TestStoreEmbeddedConformance(t *testing.T) {
	t.Run("Memory", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) persistence.Store {
			s, err := New(Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	})
	t.Run("File", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) persistence.Store {
			return openFile(t, filepath.Join(t.TempDir(), "state.log"))
		}, storetest.WithReopen(func(t *testing.T, old persistence.Store) persistence.Store {
			path := old.(*Store).log.path
			if err := old.Close(); err != nil {
				t.Fatal(err)
			}
			return openFile(t, path)
		}))
	})
	// Every subtest again, on a store reopened from the log after each
	// subtest's writes would be too slow to be worth it; instead the
	// reopen tests below replay a mixed history.
}

func openFile(t *testing.T, path string) *Store {
	t.Helper()
	s, err := New(Options{Path: path})
	if err != nil {
		t.Fatalf("New(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// floorOf returns the epoch floor of job's incarnation: epochs count from
// floor+1.
func floorOf(t *testing.T, s *Store, job string) int64 {
	t.Helper()
	l, err := s.Lineage(context.Background(), job)
	if err != nil {
		t.Fatalf("Lineage(%q): %v", job, err)
	}
	return l.Floor
}

// historyEpochs are the owner epochs history leaves in job "fenced",
// counted from the incarnation's floor.
var historyEpochs = map[record.Key]int64{"f0": 4, "f1": 3, "f2": 3}

// history writes a mix of saves, replacements, deletes, commits and
// acquires (with fenced saves in job "fenced", one of them refused) and
// returns what the store should hold in job "job" afterwards.
func history(t *testing.T, s *Store) (map[record.Key]persistence.Snapshot, map[string]int64) {
	t.Helper()
	ctx := context.Background()
	want := map[record.Key]persistence.Snapshot{}
	for i := range 50 {
		var batch []persistence.Snapshot
		for k := range 10 {
			key := record.Key(fmt.Sprintf("k%d", (i*7+k)%40))
			sn := persistence.Snapshot{Job: "job", Key: key, State: []byte(fmt.Sprintf("s%d-%d", i, k)),
				Offsets: record.OffsetsOf(map[string]int64{"p/0": int64(i), "p/1": int64(k)})}
			if (i+k)%9 == 0 {
				sn.State = nil
				delete(want, key)
			} else {
				want[key] = sn
			}
			batch = append(batch, sn)
		}
		if err := s.Save(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if err := s.CommitOffsets(ctx, "job", map[string]int64{"p/0": int64(i), "p/1": int64(50 - i)}); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			key := record.Key(fmt.Sprintf("f%d", i/5%3))
			e, err := s.Acquire(ctx, "fenced", key)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Save(ctx, []persistence.Snapshot{
				{Job: "fenced", Key: key, State: []byte(fmt.Sprint(e)), Epoch: e},
				{Job: "fenced", Key: key, State: []byte("stale"), Epoch: e - 1},
			})
			if len(persistence.Fenced(err)) != 1 {
				t.Fatalf("Save with a stale second snapshot = %v, want one fenced", err)
			}
		}
	}
	if err := s.Save(ctx, []persistence.Snapshot{{Job: "other", Key: "x", State: []byte("o")}}); err != nil {
		t.Fatal(err)
	}
	return want, map[string]int64{"p/0": 49, "p/1": 50}
}

func checkContents(t *testing.T, s *Store, want map[record.Key]persistence.Snapshot, offsets map[string]int64) {
	t.Helper()
	ctx := context.Background()
	keys, err := s.Keys(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(want) {
		t.Fatalf("Keys = %d keys, want %d", len(keys), len(want))
	}
	for k, w := range want {
		got, err := s.Load(ctx, "job", k)
		if err != nil {
			t.Fatalf("Load(%s): %v", k, err)
		}
		if !bytes.Equal(got.State, w.State) || !slices.Equal(got.Offsets, w.Offsets) {
			t.Fatalf("Load(%s) = %q %v, want %q %v", k, got.State, got.Offsets, w.State, w.Offsets)
		}
	}
	got, err := s.CommittedOffsets(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, offsets) {
		t.Fatalf("CommittedOffsets = %v, want %v", got, offsets)
	}
	if _, err := s.Load(ctx, "other", "x"); err != nil {
		t.Fatalf("Load(other, x): %v", err)
	}
	base := floorOf(t, s, "fenced")
	for k, rel := range historyEpochs {
		want := base + rel
		if e, err := s.Epoch(ctx, "fenced", k); err != nil || e != want {
			t.Fatalf("Epoch(fenced, %s) = %d, %v; want %d", k, e, err, want)
		}
		got, err := s.Load(ctx, "fenced", k)
		if err != nil || string(got.State) != fmt.Sprint(want) {
			t.Fatalf("Load(fenced, %s) = %q, %v; want the write at epoch %d", k, got.State, err, want)
		}
	}
}

func TestStoreEmbeddedReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.log")
	s := openFile(t, path)
	want, offsets := history(t, s)
	checkContents(t, s, want, offsets)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openFile(t, path)
	checkContents(t, s2, want, offsets)

	// Writes after a reopen append to the same log.
	ctx := context.Background()
	if err := s2.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "new", State: []byte("n")}}); err != nil {
		t.Fatal(err)
	}
	want["new"] = persistence.Snapshot{Job: "job", Key: "new", State: []byte("n"), Offsets: record.OffsetsOf(map[string]int64{})}
	_ = s2.Close()
	checkContents(t, openFile(t, path), want, offsets)
}

// TestStoreEmbeddedReopenWithoutClose reopens the log while the first store
// still has it open, as after a crash of the process: every acknowledged write
// is already in the file.
func TestStoreEmbeddedReopenWithoutClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.log")
	want, offsets := history(t, openFile(t, path))
	checkContents(t, openFile(t, path), want, offsets)
}

func TestStoreEmbeddedTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.log")
	s := openFile(t, path)
	want, offsets := history(t, s)
	_ = s.Close()
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A last record that was being written when the machine crashed: cut at
	// every length, or complete in length but with garbage in its payload.
	rec, err := encodeRecord(nil, logRecord{kind: kindSave, snaps: []persistence.Snapshot{
		{Job: "job", Key: "torn", State: bytes.Repeat([]byte("t"), 100)}}})
	if err != nil {
		t.Fatal(err)
	}
	garbled := bytes.Clone(rec)
	garbled[len(garbled)-3] ^= 0xff
	tails := [][]byte{garbled, {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1}}
	for i := 1; i < len(rec); i += 7 {
		tails = append(tails, rec[:i])
	}
	for i, tail := range tails {
		if err := os.WriteFile(path, append(bytes.Clone(good), tail...), 0o644); err != nil {
			t.Fatal(err)
		}
		s := openFile(t, path)
		checkContents(t, s, want, offsets)
		if _, err := s.Load(context.Background(), "job", "torn"); !errors.Is(err, persistence.ErrNotFound) {
			t.Fatalf("tail %d: Load(torn) = %v, want ErrNotFound", i, err)
		}
		// The torn bytes are gone, so new records follow valid ones.
		if err := s.Save(context.Background(), []persistence.Snapshot{{Job: "job", Key: "after", State: []byte("a")}}); err != nil {
			t.Fatal(err)
		}
		_ = s.Close()
		s = openFile(t, path)
		if _, err := s.Load(context.Background(), "job", "after"); err != nil {
			t.Fatalf("tail %d: Load(after) after reopen: %v", i, err)
		}
		_ = s.Close()
	}
}

// oldLog is a log written before owner epochs existed (record kinds 1 and 2
// only): job/a = "old a" {p/0: 7}, job/b = "old b", committed p/0 = 7.
const oldLog = "4a4e52594c4f47012100000083487f1d0102036a6f620161056f6c6420610103702f300e036a6f620162056f6c642062000b000000d2bc40fc02036a6f620103702f300e"

// TestStoreEmbeddedOldLog: a log from before epochs opens with every key at
// epoch 0, takes unfenced writes until a key is acquired, and gains epoch
// records that replay.
func TestStoreEmbeddedOldLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.log")
	b, err := hex.DecodeString(oldLog)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := openFile(t, path)
	got, err := s.Load(ctx, "job", "a")
	if err != nil || string(got.State) != "old a" || !slices.Equal(got.Offsets, record.Offsets{{Partition: "p/0", Offset: 7}}) {
		t.Fatalf("Load(a) from an old log = %+v, %v", got, err)
	}
	if e, err := s.Epoch(ctx, "job", "a"); err != nil || e != 0 {
		t.Fatalf("Epoch(a) from an old log = %d, %v; want 0", e, err)
	}
	if err := s.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "b", State: []byte("new b")}}); err != nil {
		t.Fatalf("unfenced Save to an old log: %v", err)
	}
	e, err := s.Acquire(ctx, "job", "a")
	if f := floorOf(t, s, "job"); err != nil || e != f+1 {
		t.Fatalf("Acquire = %d, %v; want floor+1 = %d", e, err, f+1)
	}
	_ = s.Close()

	s = openFile(t, path)
	if got, err := s.Epoch(ctx, "job", "a"); err != nil || got != e {
		t.Fatalf("Epoch(a) after reopen = %d, %v; want %d", got, err, e)
	}
	err = s.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "a", State: []byte("legacy")}})
	if f := persistence.Fenced(err); len(f) != 1 || f[0].Holder != e {
		t.Fatalf("unfenced Save to an acquired key = %v, want fenced", err)
	}
	if got, err := s.Load(ctx, "job", "b"); err != nil || string(got.State) != "new b" {
		t.Fatalf("Load(b) after reopen = %q, %v", got.State, err)
	}
	if got, err := s.CommittedOffsets(ctx, "job"); err != nil || got["p/0"] != 7 {
		t.Fatalf("CommittedOffsets = %v, %v", got, err)
	}
}

func TestStoreEmbeddedCorruptMiddle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.log")
	s := openFile(t, path)
	history(t, s)
	_ = s.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(logMagic)+20] ^= 0x55 // inside the first record's payload
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Path: path}); !errors.Is(err, errCorrupt) {
		t.Fatalf("New on a log damaged in the middle = %v, want errCorrupt", err)
	}
}

func TestStoreEmbeddedNotALog(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"other":   "hello, this is not a log",
		"version": "JNRYLOG\x02",
		"short":   "xy",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := New(Options{Path: path}); !errors.Is(err, errCorrupt) {
			t.Errorf("%s: New = %v, want errCorrupt", name, err)
		}
	}
	if _, err := New(Options{Path: filepath.Join(dir, "missing-dir", "state.log")}); err == nil {
		t.Error("New in a missing directory succeeded")
	}
}

func TestStoreEmbeddedCompact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.log")
	s := openFile(t, path)
	ctx := context.Background()
	state := bytes.Repeat([]byte("x"), 1000)
	// Rewrite the same 100 keys until the log is far bigger than the data.
	for i := 0; i < 2*compactMin/(100*len(state))+1; i++ {
		var batch []persistence.Snapshot
		for k := range 100 {
			batch = append(batch, persistence.Snapshot{Job: "job", Key: record.Key(fmt.Sprint(k)), State: state,
				Offsets: record.OffsetsOf(map[string]int64{"p/0": int64(i)})})
		}
		if err := s.Save(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CommitOffsets(ctx, "job", map[string]int64{"p/0": 7}); err != nil {
		t.Fatal(err)
	}
	for k := range 1000 { // many epochs, and a key with epoch 3 and no snapshot
		n := 1 + 2*(k/999)
		for range n {
			if _, err := s.Acquire(ctx, "job", record.Key(fmt.Sprint("e", k))); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = s.Close()
	before, _ := os.Stat(path)
	s = openFile(t, path)
	after, _ := os.Stat(path)
	if after.Size() >= before.Size()/4 {
		t.Fatalf("log not compacted: %d bytes before, %d after", before.Size(), after.Size())
	}
	keys, err := s.Keys(ctx, "job")
	if err != nil || len(keys) != 100 {
		t.Fatalf("Keys after compaction = %d, %v", len(keys), err)
	}
	if got, _ := s.CommittedOffsets(ctx, "job"); got["p/0"] != 7 {
		t.Fatalf("CommittedOffsets after compaction = %v", got)
	}
	base := floorOf(t, s, "job")
	for k, want := range map[string]int64{"e0": base + 1, "e998": base + 1, "e999": base + 3, "e1000": 0} {
		if e, err := s.Epoch(ctx, "job", record.Key(k)); err != nil || e != want {
			t.Fatalf("Epoch(%s) after compaction = %d, %v; want %d", k, e, err, want)
		}
	}
	// The compacted log is appended to and replays.
	if err := s.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "0", State: []byte("new")}}); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	s = openFile(t, path)
	got, err := s.Load(ctx, "job", "0")
	if err != nil || string(got.State) != "new" {
		t.Fatalf("Load after compaction and reopen = %q, %v", got.State, err)
	}
	if _, err := os.Stat(path + ".compact"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left behind: %v", err)
	}
}

// TestStoreEmbeddedHeldBytes: HeldBytes follows the stored snapshots
// (a save adds, an overwrite replaces, an empty state deletes), and a
// reopened log counts the same.
func TestStoreEmbeddedHeldBytes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.log")
	s, err := New(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	save := func(key, state string) {
		t.Helper()
		ep, err := s.Epoch(ctx, "j", record.Key(key))
		if err != nil {
			t.Fatal(err)
		}
		if ep == 0 {
			if ep, err = s.Acquire(ctx, "j", record.Key(key)); err != nil {
				t.Fatal(err)
			}
		}
		sn := persistence.Snapshot{Job: "j", Key: record.Key(key), Epoch: ep, State: []byte(state), Offsets: record.OffsetsOf(map[string]int64{"src/0": 1})}
		if err := s.Save(ctx, []persistence.Snapshot{sn}); err != nil {
			t.Fatal(err)
		}
	}
	per := func(key, state string) int64 { return int64(EntryOverhead + len(key) + len(state) + len("src/0") + 24) }
	for _, tc := range []struct {
		name       string
		key, state string
		want       int64
		keys       int
	}{
		{"first key", "a", "12345", per("a", "12345"), 1},
		{"second key", "b", "xy", per("a", "12345") + per("b", "xy"), 2},
		{"overwrite replaces", "a", strings.Repeat("z", 100), per("a", strings.Repeat("z", 100)) + per("b", "xy"), 2},
		{"empty state deletes", "b", "", per("a", strings.Repeat("z", 100)), 1},
	} {
		save(tc.key, tc.state)
		if got := s.HeldBytes(); got != tc.want {
			t.Errorf("%s: HeldBytes %d, want %d", tc.name, got, tc.want)
		}
		if got := s.StoredKeys(); got != tc.keys {
			t.Errorf("%s: StoredKeys %d, want %d", tc.name, got, tc.keys)
		}
	}
	checkReopenedHeld(t, s, path)
}

// TestStoreEmbeddedHeldBytesParts: with parts, HeldBytes counts each live
// part once (PartOverhead, name and value) through whole writes and
// deltas that add, replace and delete parts, and a reopened log counts
// the same.
func TestStoreEmbeddedHeldBytesParts(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.log")
	s, err := New(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := s.Acquire(ctx, "j", "k")
	if err != nil {
		t.Fatal(err)
	}
	p := func(name, v string) persistence.Part { return persistence.Part{Name: name, Value: []byte(v)} }
	part := func(name, v string) int64 { return int64(PartOverhead + len(name) + len(v)) }
	base := int64(EntryOverhead + len("k") + len("B") + len("src/0") + 24)
	for _, tc := range []struct {
		name  string
		delta bool
		parts []persistence.Part
		want  int64
	}{
		{"whole", false, []persistence.Part{p("l", "left"), p("r:1", "one")}, base + part("l", "left") + part("r:1", "one")},
		{"delta adds", true, []persistence.Part{p("r:2", "two")}, base + part("l", "left") + part("r:1", "one") + part("r:2", "two")},
		{"delta replaces and deletes", true, []persistence.Part{p("r:1", "ONE!"), p("l", "")}, base + part("r:1", "ONE!") + part("r:2", "two")},
		{"delta deletes one not there", true, []persistence.Part{p("r:9", "")}, base + part("r:1", "ONE!") + part("r:2", "two")},
		{"whole replaces all", false, []persistence.Part{p("r:3", "3")}, base + part("r:3", "3")},
		{"delta deletes the last", true, []persistence.Part{p("r:3", "")}, base},
	} {
		sn := persistence.Snapshot{Job: "j", Key: "k", Epoch: ep, State: []byte("B"), Offsets: record.OffsetsOf(map[string]int64{"src/0": 1}), Delta: tc.delta, Parts: tc.parts}
		if err := s.Save(ctx, []persistence.Snapshot{sn}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := s.HeldBytes(); got != tc.want {
			t.Errorf("%s: HeldBytes %d, want %d", tc.name, got, tc.want)
		}
	}
	if err := s.Save(ctx, []persistence.Snapshot{{Job: "j", Key: "k", Epoch: ep, State: []byte("B"), Offsets: record.OffsetsOf(map[string]int64{"src/0": 1}),
		Delta: true, Parts: []persistence.Part{p("r:4", "four")}}}); err != nil {
		t.Fatal(err)
	}
	checkReopenedHeld(t, s, path)
}

// checkReopenedHeld closes s and reopens its log at path: HeldBytes must
// count the same.
func checkReopenedHeld(t *testing.T, s *Store, path string) {
	t.Helper()
	want := s.HeldBytes()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := New(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.HeldBytes(); got != want {
		t.Errorf("reopened: HeldBytes %d, want %d", got, want)
	}
}

// TestSaveOwnedKeepsBytes: an Owned snapshot's State and part values are
// kept as given (no copy), but a State with more spare capacity than
// ownedSlack, which is copied to its bytes; a copied snapshot's never are.
func TestSaveOwnedKeepsBytes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		owned       bool
		spare       int
		keepsState  bool
		keepsValues bool
	}{
		{"owned", true, 0, true, true},
		{"owned, spare within the slack", true, ownedSlack, true, true},
		{"owned, spare past the slack", true, ownedSlack + 1, false, true},
		{"copied", false, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			state := append(make([]byte, 0, 5+tc.spare), "state"...)
			value := []byte("value")
			sn := persistence.Snapshot{Job: "j", Key: "k", State: state, Owned: tc.owned,
				Parts: []persistence.Part{{Name: "p", Value: value}}}
			if err := s.Save(context.Background(), []persistence.Snapshot{sn}); err != nil {
				t.Fatal(err)
			}
			e := s.mu.jobs["j"].snaps["k"]
			if string(e.state) != "state" || string(e.parts["p"]) != "value" {
				t.Fatalf("kept %q, parts %q", e.state, e.parts)
			}
			if kept := &e.state[0] == &state[0]; kept != tc.keepsState {
				t.Errorf("state kept as given = %v, want %v", kept, tc.keepsState)
			}
			if cap(e.state)-len(e.state) > ownedSlack {
				t.Errorf("kept state has %d bytes of spare capacity", cap(e.state)-len(e.state))
			}
			if kept := &e.parts["p"][0] == &value[0]; kept != tc.keepsValues {
				t.Errorf("part value kept as given = %v, want %v", kept, tc.keepsValues)
			}
		})
	}
}

// TestStoreEmbeddedLogOffsetsOrder: a save record is written with its
// offsets in partition order, the bytes an old writer (offsets in a map's
// order) made for that order; a record from an old writer in another
// order decodes in order, and one with a partition twice is corrupt.
func TestStoreEmbeddedLogOffsetsOrder(t *testing.T) {
	// payload is a kind 1 record of job/k = "s" with offsets in the order given.
	payload := func(offsets ...record.PartitionOffset) []byte {
		b := []byte{kindSave, 1}
		b = appendString(b, "job")
		b = appendString(b, "k")
		b = appendString(b, "s")
		b = binary.AppendUvarint(b, uint64(len(offsets)))
		for _, po := range offsets {
			b = appendString(b, po.Partition)
			b = binary.AppendVarint(b, po.Offset)
		}
		return b
	}
	p0, p1 := record.PartitionOffset{Partition: "p/0", Offset: 3}, record.PartitionOffset{Partition: "p/1", Offset: -5}
	sorted := record.Offsets{p0, p1}
	enc, err := encodeRecord(nil, logRecord{kind: kindSave, snaps: []persistence.Snapshot{{Job: "job", Key: "k", State: []byte("s"), Offsets: sorted}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := payload(p0, p1); !bytes.Equal(enc[frameHeader:], want) {
		t.Errorf("encoded payload %x, want %x", enc[frameHeader:], want)
	}
	for _, tc := range []struct {
		name    string
		payload []byte
		corrupt bool
		want    record.Offsets
	}{
		{"in order", payload(p0, p1), false, sorted},
		{"map order", payload(p1, p0), false, sorted},
		{"none", payload(), false, nil},
		{"twice", payload(p0, p0), true, nil},
	} {
		r, err := decodePayload(tc.payload)
		switch {
		case tc.corrupt:
			if err == nil {
				t.Errorf("%s: decoded %+v, want an error", tc.name, r)
			}
		case err != nil || len(r.snaps) != 1 || !slices.Equal(r.snaps[0].Offsets, tc.want):
			t.Errorf("%s: %+v, %v; want offsets %v", tc.name, r, err, tc.want)
		}
	}
}
