package redisstore

import (
	"context"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/joinery/joinery/persistence"
)

var _ persistence.FloorStore = (*Store)(nil)

// Replay floors (see the package doc, "Replay floors"): on a cluster a
// job's committed offset of a partition lives in one slot group, on one
// master, and the state of its keys in all 256. A master failed over to a
// lagging replica loses the last writes of its groups' keys while another
// master keeps the committed offset that those writes were acknowledged
// for: a node restarted from the committed offsets would never re-read
// what the lost writes had applied. So every CommitOffsets on a cluster
// also copies the offsets this Store committed, at most every floorEvery,
// into every group's floor hash, after the commit (in the background): in each master's
// replication stream the copy comes after the key writes it covers, and a
// replica that has the copy has those writes. RecoveryOffsets is the least
// of the copies and the committed offset, per partition.

// floorEvery is how often a Store copies its committed offsets into every
// slot group: a restart re-reads about this much beyond the last commit,
// and each copy costs one small script per group (256, in one pipeline).
const floorEvery = time.Second

// floorTimeout bounds one copy.
const floorTimeout = 5 * time.Second

// floorKey is a group's floor hash: partition id -> offset (decimal).
func floorKey(gp string) string { return gp + "floor" }

// floorState is what a Store committed for one job and when it last
// copied it.
type floorState struct {
	mu      sync.Mutex
	offsets map[string]int64 // the highest offset committed per partition
	kept    map[string]int64 // what the last copy that reached every group carried (KeptFloor)
	tried   time.Time        // when the last copy started
	copying bool             // a copy is under way
	done    chan struct{}    // closed when the copy under way ends (tests wait on it)
}

// copyFloors notes offsets, committed for job, and starts a copy of
// everything committed so far into every group when floorEvery has passed
// since the last one started (the first commit starts one at once) and
// none is under way. The copy runs on its own, after the commit it
// follows, so no commit waits for it. A failed copy is not an error: the
// older copies stay, which only means a longer re-read, and the next one
// starts floorEvery after it.
func (s *Store) copyFloors(job string, l *jobLayout, offsets map[string]int64) {
	f := s.floorState(job)
	f.mu.Lock()
	defer f.mu.Unlock()
	for p, o := range offsets {
		if cur, ok := f.offsets[p]; !ok || o > cur {
			f.offsets[p] = o
		}
	}
	if f.copying || len(f.offsets) == 0 || time.Since(f.tried) < floorEvery {
		return
	}
	f.copying, f.tried, f.done = true, time.Now(), make(chan struct{})
	var args []any
	for _, p := range slices.Sorted(maps.Keys(f.offsets)) {
		args = append(args, p, strconv.FormatInt(f.offsets[p], 10))
	}
	calls := make([]scriptCall, groups)
	for g := range calls {
		calls[g] = scriptCall{keys: []string{floorKey(l.prefixes[g])}, args: args}
	}
	copied := maps.Clone(f.offsets)
	go func(done chan struct{}) {
		ctx, cancel := context.WithTimeout(context.Background(), floorTimeout)
		_, err := s.runScripts(ctx, commitScript, calls)
		cancel()
		f.mu.Lock()
		f.copying = false
		if err == nil {
			f.kept = copied // every group's floor is at least this now
		}
		f.mu.Unlock()
		close(done)
	}(f.done)
}

// KeptFloor implements persistence.FloorStore: on a cluster, what this
// Store's last copy that reached every group carried for partition (each
// group's floor keeps the highest copy, so RecoveryOffsets answers at
// least that while no master goes back in time); on one server, where
// RecoveryOffsets is CommittedOffsets, math.MaxInt64.
func (s *Store) KeptFloor(job, partition string) (int64, bool) {
	if !s.cluster {
		return math.MaxInt64, true
	}
	f := s.floorState(job)
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.kept[partition]
	return o, ok
}

// floorState returns job's floorState, made on first use.
func (s *Store) floorState(job string) *floorState {
	v, ok := s.floors.Load(job)
	if !ok {
		v, _ = s.floors.LoadOrStore(job, &floorState{offsets: map[string]int64{}})
	}
	return v.(*floorState)
}

// floorsCopied waits until the copy of job's floors under way, if any,
// has ended (for tests).
func (s *Store) floorsCopied(job string) {
	f := s.floorState(job)
	f.mu.Lock()
	done := f.done
	f.mu.Unlock()
	if done != nil {
		<-done
	}
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
