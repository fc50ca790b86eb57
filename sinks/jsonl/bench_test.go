package jsonl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/record"
)

// BenchmarkWrite writes batches of 256 changelog outputs (rows cached as
// JSON by the key core, pks as the join makes them) to io.Discard;
// allocs/op is per batch:
//
//	go test -run '^$' -bench BenchmarkWrite -benchmem ./sinks/jsonl/
func BenchmarkWrite(b *testing.B) {
	batch := make([]record.Output, 256)
	for i := range batch {
		row := record.Row{"id": json.Number(fmt.Sprint(i)), "host": fmt.Sprintf("d%d.example.com", i)}
		enc, _ := json.Marshal(row)
		batch[i] = record.Output{ID: fmt.Sprintf("cdc/0/%d/0", i), Kind: record.Insert, PK: fmt.Sprintf("[7,%d]", i), Row: row, RowJSON: enc}
	}
	s := New(io.Discard, changelog.Changelog)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := s.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
}
