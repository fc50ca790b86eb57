package debezium

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/record"
)

// benchLines are Debezium envelopes of the seed's users ⋈ domains join, in
// three shapes:
//   - gen: internal/cdcgen's lines as they are (source holds the table only);
//   - postgres: the same changes with the source block a Postgres connector
//     writes (version, connector, name, ts_ms, snapshot, db, sequence,
//     schema, table, txId, lsn, xmin) and "transaction": null;
//   - wide: postgres with ten more 24-byte columns per row that the join
//     never reads.
func benchLines(b *testing.B) map[string][][]byte {
	h := cdcgen.Generate(cdcgen.Config{Seed: 1, Users: 1000, Domains: 3000, Changes: 4000})
	out := map[string][][]byte{"gen": h.Lines}
	for _, shape := range []string{"postgres", "wide"} {
		for i, l := range h.Lines {
			var env map[string]any
			if err := json.Unmarshal(l, &env); err != nil {
				b.Fatal(err)
			}
			table := env["source"].(map[string]any)["table"]
			env["source"] = map[string]any{
				"version": "2.7.3.Final", "connector": "postgresql", "name": "app", "ts_ms": 1_700_000_000_000 + i,
				"snapshot": "false", "db": "app", "sequence": fmt.Sprintf(`["%d","%d"]`, 24023128+i*100, 24023128+i*100+8),
				"schema": "public", "table": table, "txId": 555 + i, "lsn": 24023128 + i*100, "xmin": nil,
			}
			env["transaction"] = nil
			if shape == "wide" {
				for _, side := range []string{"before", "after"} {
					if r, ok := env[side].(map[string]any); ok {
						for c := range 10 {
							r[fmt.Sprintf("unused_%02d", c)] = fmt.Sprintf("%024d", i*10+c)
						}
					}
				}
			}
			nb, err := json.Marshal(env)
			if err != nil {
				b.Fatal(err)
			}
			out[shape] = append(out[shape], nb)
		}
	}
	return out
}

// seedKeep keeps what the seed's query reads: the join keys, the projected
// columns and the primary keys.
var seedKeep = NewKeep(map[string][]string{
	"users":   {"id", "firstname", "lastname"},
	"domains": {"id", "user_id", "domain_name"},
})

// BenchmarkDecode compares the encoding/json decoder (encoding-json) with
// the package's (jsontext), and the package's with the seed's column
// filter (jsontext+keep), on each shape of benchLines.
func BenchmarkDecode(b *testing.B) {
	lines := benchLines(b)
	decoders := []struct {
		name string
		dec  func([]byte, record.Position) (Envelope, error)
	}{
		{"encoding-json", stdDecodeEnvelope},
		{"jsontext", DecodeEnvelope},
		{"jsontext+keep", func(l []byte, pos record.Position) (Envelope, error) { return DecodeEnvelopeKeep(l, pos, seedKeep) }},
	}
	for _, shape := range []string{"gen", "postgres", "wide"} {
		ls := lines[shape]
		var bytes int64
		for _, l := range ls {
			bytes += int64(len(l))
		}
		for _, d := range decoders {
			b.Run(shape+"/"+d.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(bytes / int64(len(ls)))
				pos := record.Position{Source: "in"}
				i := 0
				for b.Loop() {
					pos.Offset = int64(i)
					if _, err := d.dec(ls[i%len(ls)], pos); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}
