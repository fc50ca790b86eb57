package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
			s := benchTarget(b, target)
			for _, writers := range []int{1, 4} {
				b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) { benchSave(b, s, writers) })
			}
		})
	}
}

// benchTarget opens a store on target: "single" (one local
// redis-server) or "cluster3" (a local three-master cluster).
func benchTarget(b *testing.B, target string) *Store {
	if target == "single" {
		return newStore(b, testutil.StartRedis(b).Addr)
	}
	return newClusterStore(b, testutil.StartRedisCluster(b, 3), "bench")
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
						State: state, Offsets: record.Offsets{{Partition: "src/0", Offset: k}}, HasTimer: k%2 == 0, NextTimer: k}
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

// BenchmarkStoreUpdate writes batches of 256 one-row updates of user keys
// holding 10 or 100 domains rows (about 120 bytes each) on one local
// redis-server: whole (each key's state, all its rows, as one value) or as
// a delta (the changed row, a 300-byte outbox entry and a small base;
// persistence.Snapshot.Delta). It reports the bytes handed to Save per
// update (state and parts), updates/s and redis-server's CPU per update
// (INFO cpu, its own user and system time):
//
//	go test -run '^$' -bench BenchmarkStoreUpdate ./persistence/redisstore
func BenchmarkStoreUpdate(b *testing.B) {
	s := newStore(b, testutil.StartRedis(b).Addr)
	for _, domains := range []int{10, 100} {
		for _, delta := range []bool{false, true} {
			name := fmt.Sprintf("domains=%d/whole", domains)
			if delta {
				name = fmt.Sprintf("domains=%d/delta", domains)
			}
			b.Run(name, func(b *testing.B) { benchUpdate(b, s, domains, delta) })
		}
	}
}

func benchUpdate(b *testing.B, s *Store, domains int, delta bool) {
	const batchSize, keys = 256, 4096
	ctx := context.Background()
	row := func(d, v int) []byte {
		return fmt.Appendf(nil, `{"id":%d,"name":"domain-%d.example.com","user_id":1,"v":%d,"verified":true,"x":"%060d"}`, d, d, v, 0)
	}
	outbox := make([]byte, 300)
	job := fmt.Sprintf("bench-%d-%v", domains, delta)
	// Every key starts whole, with its rows as parts.
	for k := 0; k < keys; k += batchSize {
		batch := make([]persistence.Snapshot, 0, batchSize)
		for i := k; i < k+batchSize; i++ {
			var ps []persistence.Part
			for d := range domains {
				ps = append(ps, persistence.Part{Name: fmt.Sprint("r:", d), Value: row(d, 0)})
			}
			batch = append(batch, persistence.Snapshot{Job: job, Key: record.Key(fmt.Sprint("user-", i)), State: []byte(`\x01{"q":1}`), Parts: ps})
		}
		if err := s.Save(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	var sent int64
	batch := make([]persistence.Snapshot, batchSize)
	cpu0 := serverCPU(b, s)
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		for i := range batch {
			u := n*batchSize + i
			key, d := record.Key(fmt.Sprint("user-", u%keys)), u%domains
			sn := persistence.Snapshot{Job: job, Key: key, Offsets: record.Offsets{{Partition: "cdc/0", Offset: int64(u)}}}
			if delta {
				sn.State, sn.Delta = []byte(`\x01{"q":2}`), true
				sn.Parts = []persistence.Part{{Name: fmt.Sprint("r:", d), Value: row(d, u)}, {Name: fmt.Sprintf("o:%016x", u), Value: outbox}}
			} else {
				// The whole state: every row and the outbox entry, one value.
				st := append([]byte(`\x01{"q":2,"j":"`), outbox...)
				for r := range domains {
					st = append(st, row(r, u)...)
				}
				sn.State = st
			}
			sent += int64(len(sn.State))
			for _, p := range sn.Parts {
				sent += int64(len(p.Name) + len(p.Value))
			}
			batch[i] = sn
		}
		if err := s.Save(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(sent)/float64(b.N*batchSize), "bytes/update")
	b.ReportMetric(float64(b.N*batchSize)/b.Elapsed().Seconds(), "updates/s")
	b.ReportMetric((serverCPU(b, s)-cpu0).Seconds()*1e6/float64(b.N*batchSize), "server-µs/update")
}

// serverCPU is the CPU time s's server has used (INFO cpu: used_cpu_user
// plus used_cpu_sys, its main process and threads).
func serverCPU(b *testing.B, s *Store) time.Duration {
	info, err := s.client.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var sec float64
	for line := range strings.SplitSeq(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("INFO cpu %s: %v", k, err)
			}
			sec += f
		}
	}
	return time.Duration(sec * float64(time.Second))
}

// BenchmarkStoreLoad loads 256 keys (10 domains rows each, as parts) one
// Load at a time, as activations did, or with one LoadMany; and activates
// them (Acquire then Load) one at a time or with one AcquireLoadMany; on
// one local redis-server and on a local three-master cluster:
//
//	go test -run '^$' -bench BenchmarkStoreLoad ./persistence/redisstore
func BenchmarkStoreLoad(b *testing.B) {
	for _, target := range []string{"single", "cluster3"} {
		b.Run(target, func(b *testing.B) {
			s := benchTarget(b, target)
			const n = 256
			ctx := context.Background()
			keys := make([]record.Key, n)
			batch := make([]persistence.Snapshot, n)
			for i := range keys {
				keys[i] = record.Key(fmt.Sprint("user-", i))
				var ps []persistence.Part
				for d := range 10 {
					ps = append(ps, persistence.Part{Name: fmt.Sprint("r:", d), Value: fmt.Appendf(nil, `{"id":%d,"name":"domain-%d.example.com"}`, d, d)})
				}
				batch[i] = persistence.Snapshot{Job: "bench", Key: keys[i], State: []byte("base"), Parts: ps}
			}
			if err := s.Save(ctx, batch); err != nil {
				b.Fatal(err)
			}
			b.Run("one-by-one", func(b *testing.B) {
				for range b.N {
					for _, k := range keys {
						if _, err := s.Load(ctx, "bench", k); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "keys/s")
			})
			b.Run("batched", func(b *testing.B) {
				for range b.N {
					if _, err := s.LoadMany(ctx, "bench", keys); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "keys/s")
			})
			// An activation: Acquire, then Load.
			b.Run("activate-one-by-one", func(b *testing.B) {
				for range b.N {
					for _, k := range keys {
						if _, err := s.Acquire(ctx, "bench", k); err != nil {
							b.Fatal(err)
						}
						if _, err := s.Load(ctx, "bench", k); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "keys/s")
			})
			b.Run("activate-batched", func(b *testing.B) {
				for range b.N {
					if _, _, err := s.AcquireLoadMany(ctx, "bench", keys); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "keys/s")
			})
		})
	}
}
