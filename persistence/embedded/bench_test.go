package embedded

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// BenchmarkStoreSave saves batches of 256 snapshots of about 200 bytes,
// in memory and on a file (one fsync per batch).
func BenchmarkStoreSave(b *testing.B) {
	for _, tc := range []struct {
		name string
		path func(b *testing.B) string
	}{
		{"memory", func(*testing.B) string { return "" }},
		{"file", func(b *testing.B) string { return filepath.Join(b.TempDir(), "state.log") }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := New(Options{Path: tc.path(b)})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			benchSave(b, s)
		})
	}
}

func benchSave(b *testing.B, s persistence.Store) {
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
