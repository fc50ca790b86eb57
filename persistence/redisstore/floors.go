package redisstore

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/joinery/joinery/persistence"
)

var _ persistence.RecoveryStore = (*Store)(nil)

// Replay floors (see the package doc, "Replay floors"): on a cluster a
// job's committed offset of a partition lives in one slot group, on one
// master, and the state of its keys in all 256. A master failed over to a
// lagging replica loses the last writes of its groups' keys while another
// master keeps the committed offset that those writes were acknowledged
// for: a node restarted from the committed offsets would never re-read
// what the lost writes had applied. So every CommitOffsets on a cluster
// also copies the offsets this Store committed, at most every floorEvery,
// into every group's floor hash, after the commit: in each master's
// replication stream the copy comes after the key writes it covers, and a
// replica that has the copy has those writes. RecoveryOffsets is the least
// of the copies and the committed offset, per partition.

// floorEvery is how often a Store copies its committed offsets into every
// slot group: a restart re-reads about this much beyond the last commit,
// and each copy costs one small script per group (256, in one pipeline).
const floorEvery = time.Second

// floorKey is a group's floor hash: partition id -> offset (decimal).
func floorKey(gp string) string { return gp + "floor" }

// floorState is what a Store committed for one job and when it last
// copied it.
type floorState struct {
	mu      sync.Mutex
	offsets map[string]int64 // the highest offset committed per partition
	copied  time.Time        // the last copy that every group took
	copying bool             // a copy is under way (in another commit)
}

// copyFloors notes offsets, committed for job, and copies everything
// committed so far into every group when floorEvery has passed since the
// last complete copy (the first commit copies at once) and no other
// commit is copying. A failed copy is not an error: the older copies stay,
// which only means a longer re-read, and the next commit tries again.
func (s *Store) copyFloors(ctx context.Context, job string, l *jobLayout, offsets map[string]int64) {
	v, ok := s.floors.Load(job)
	if !ok {
		v, _ = s.floors.LoadOrStore(job, &floorState{offsets: map[string]int64{}})
	}
	f := v.(*floorState)
	f.mu.Lock()
	for p, o := range offsets {
		if cur, ok := f.offsets[p]; !ok || o > cur {
			f.offsets[p] = o
		}
	}
	if f.copying || len(f.offsets) == 0 || time.Since(f.copied) < floorEvery {
		f.mu.Unlock()
		return
	}
	f.copying = true
	var args []any
	for _, p := range slices.Sorted(maps.Keys(f.offsets)) {
		args = append(args, p, strconv.FormatInt(f.offsets[p], 10))
	}
	f.mu.Unlock()
	calls := make([]scriptCall, groups)
	for g := range calls {
		calls[g] = scriptCall{keys: []string{floorKey(l.prefixes[g])}, args: args}
	}
	_, err := s.runScripts(ctx, commitScript, calls)
	f.mu.Lock()
	f.copying = false
	if err == nil {
		f.copied = time.Now()
	}
	f.mu.Unlock()
}

// RecoveryOffsets implements persistence.RecoveryStore: per partition the
// least of its committed offset and its floor in every group that has one
// (one pipeline of HGETALL over the 256 groups, with CommittedOffsets'
// own). On one server the committed offsets and the state go back
// together, so there it is CommittedOffsets.
func (s *Store) RecoveryOffsets(ctx context.Context, job string) (map[string]int64, error) {
	out, err := s.CommittedOffsets(ctx, job)
	if err != nil || !s.cluster {
		return out, err
	}
	err = s.groupOffsets(ctx, job, "replay floor", floorKey, func(p string, o int64) {
		if cur, ok := out[p]; !ok || o < cur {
			out[p] = o
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
