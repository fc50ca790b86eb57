package redisstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// BenchmarkStoreSave saves batches of 256 snapshots of about 200 bytes to a
// local redis-server (no AOF), one MULTI/EXEC pipeline per batch.
func BenchmarkStoreSave(b *testing.B) {
	s := newStore(b, testutil.StartRedis(b).Addr)
	const batchSize, keys = 256, 100_000
	ctx := context.Background()
	state := make([]byte, 200)
	for i := range state {
		state[i] = byte(i)
	}
	batch := make([]persistence.Snapshot, batchSize)
	b.ReportAllocs()
	b.SetBytes(batchSize * int64(len(state)))
	n := 0
	for b.Loop() {
		for i := range batch {
			batch[i] = persistence.Snapshot{Job: "bench", Key: record.Key(fmt.Sprintf("key-%d", n%keys)),
				State: state, Offsets: map[string]int64{"src/0": int64(n)}}
			n++
		}
		if err := s.Save(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "snapshots/s")
}
