package redisstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// BenchmarkStoreSave saves batches of 256 snapshots of about 200 bytes, on
// one local redis-server and on a local three-master Redis Cluster (no AOF
// on either), from one writer (one node's actors.Writer: one Save at a
// time) and from four at once (four nodes). It reports snapshots/s:
//
//	go test -run '^$' -bench BenchmarkStoreSave -benchtime 3s ./persistence/redisstore
//
// On one machine the cluster's masters share its cores with the client,
// so the figures show the overhead and the parallelism of the split, not
// a cluster's capacity on separate hosts.
func BenchmarkStoreSave(b *testing.B) {
	for _, target := range []string{"single", "cluster3"} {
		b.Run(target, func(b *testing.B) {
			// Opened once per target; the sub-benchmarks run several times.
			var s *Store
			if target == "single" {
				s = newStore(b, testutil.StartRedis(b).Addr)
			} else {
				s = newClusterStore(b, testutil.StartRedisCluster(b, 3), "bench")
			}
			for _, writers := range []int{1, 4} {
				b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) { benchSave(b, s, writers) })
			}
		})
	}
}

func benchSave(b *testing.B, s *Store, writers int) {
	const batchSize, keys = 256, 100_000
	ctx := context.Background()
	state := make([]byte, 200)
	for i := range state {
		state[i] = byte(i)
	}
	b.ReportAllocs()
	b.SetBytes(batchSize * int64(len(state)))
	var n atomic.Int64
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			batch := make([]persistence.Snapshot, batchSize)
			for next.Add(1) <= int64(b.N) {
				for i := range batch {
					k := n.Add(1)
					batch[i] = persistence.Snapshot{Job: "bench", Key: record.Key(fmt.Sprintf("key-%d-%d", w, k%keys)),
						State: state, Offsets: map[string]int64{"src/0": k}, HasTimer: k%2 == 0, NextTimer: k}
				}
				if err := s.Save(ctx, batch); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(n.Load())/b.Elapsed().Seconds(), "snapshots/s")
}
