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
// in memory and on a file (one fsync per batch), copied by the store or
// handed over (persistence.Snapshot.Owned, as actors' Writer does).
func BenchmarkStoreSave(b *testing.B) {
	for _, tc := range []struct {
		name  string
		path  func(b *testing.B) string
		owned bool
	}{
		{"memory", func(*testing.B) string { return "" }, false},
		{"file", func(b *testing.B) string { return filepath.Join(b.TempDir(), "state.log") }, false},
		{"memory/owned", func(*testing.B) string { return "" }, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := New(Options{Path: tc.path(b)})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			benchSave(b, s, tc.owned)
		})
	}
}

func benchSave(b *testing.B, s persistence.Store, owned bool) {
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
				State: state, Offsets: record.Offsets{{Partition: "src/0", Offset: int64(n)}}, Owned: owned}
			n++
		}
		if err := s.Save(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "snapshots/s")
}

// BenchmarkStoreUpdate writes batches of 256 one-row updates of user keys
// holding 100 domains rows (about 120 bytes each) to a log file, whole
// (every row in the state) or as deltas (the row and a 300-byte outbox
// entry as parts), and reports the log bytes per update:
//
//	go test -run '^$' -bench BenchmarkStoreUpdate ./persistence/embedded
func BenchmarkStoreUpdate(b *testing.B) {
	for _, delta := range []bool{false, true} {
		name := "whole"
		if delta {
			name = "delta"
		}
		b.Run(name, func(b *testing.B) {
			s, err := New(Options{Path: filepath.Join(b.TempDir(), "state.log")})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const batchSize, keys, domains = 256, 1024, 100
			ctx := context.Background()
			row := func(d, v int) []byte {
				return fmt.Appendf(nil, `{"id":%d,"name":"domain-%d.example.com","user_id":1,"v":%d,"x":"%070d"}`, d, d, v, 0)
			}
			outbox := make([]byte, 300)
			for k := 0; k < keys; k += batchSize {
				var batch []persistence.Snapshot
				for i := k; i < k+batchSize; i++ {
					var ps []persistence.Part
					for d := range domains {
						ps = append(ps, persistence.Part{Name: fmt.Sprint("r:", d), Value: row(d, 0)})
					}
					batch = append(batch, persistence.Snapshot{Job: "bench", Key: record.Key(fmt.Sprint("user-", i)), State: []byte("base"), Parts: ps})
				}
				if err := s.Save(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			start := s.log.size
			batch := make([]persistence.Snapshot, batchSize)
			n := 0
			for b.Loop() {
				for i := range batch {
					sn := persistence.Snapshot{Job: "bench", Key: record.Key(fmt.Sprint("user-", n%keys)), Offsets: record.Offsets{{Partition: "cdc/0", Offset: int64(n)}}}
					if delta {
						sn.State, sn.Delta = []byte("base"), true
						sn.Parts = []persistence.Part{{Name: fmt.Sprint("r:", n%domains), Value: row(n%domains, n)}, {Name: fmt.Sprintf("o:%016x", n), Value: outbox}}
					} else {
						st := append([]byte("base"), outbox...)
						for d := range domains {
							st = append(st, row(d, n)...)
						}
						sn.State = st
					}
					batch[i] = sn
					n++
				}
				if err := s.Save(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.log.size-start)/float64(n), "log-bytes/update")
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "updates/s")
		})
	}
}
