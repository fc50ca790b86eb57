package sendstate

import (
	"fmt"
	"testing"

	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/record"
)

// BenchmarkSend stamps a batch of 256 one-event requests to distinct keys
// (one partition) while the previous batch is in flight, then answers that
// previous batch: a reader's per-key-request bookkeeping in a backlog.
// ns/op and allocs/op are per batch:
//
//	go test -run '^$' -bench BenchmarkSend -benchmem ./node/sendstate/
func BenchmarkSend(b *testing.B) {
	const size = 256
	keys := make([]record.Key, size)
	for i := range keys {
		keys[i] = record.Key(fmt.Sprintf("key-%d", i))
	}
	var fl Keys
	r := NewReader(0)
	r.Commit(map[string]int64{"src/0": 1}, 0)
	var prev []record.Key
	prevSeq := uint64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		var batch Batch
		for j, k := range keys {
			a := batch.Apply(k)
			a.Events = append(a.Events, keycore.Event{Pos: record.Position{Source: "src", Offset: int64(i*size + j)}})
		}
		seq := r.NextSeq()
		r.Send(&fl, seq, &batch, "s")
		if prev != nil {
			r.Answered(&fl, prevSeq, prev)
		}
		prev, prevSeq = batch.Keys(), seq
	}
}
