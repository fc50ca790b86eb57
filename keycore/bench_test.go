package keycore

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/joinery/joinery/record"
)

// BenchmarkCoreUpdate steps one change of one domains row of a user key
// holding 10 or 100 domains (and its outbox entry, the previous one
// committed) and makes its Write, whole (the key's state re-encoded) or
// incremental (Config.Parts: the changed row, the new outbox entry, the
// row's position and a small base). It reports the bytes a Write hands the
// store (state and parts, names included):
//
//	go test -run '^$' -bench BenchmarkCoreUpdate -benchmem ./keycore/
func BenchmarkCoreUpdate(b *testing.B) {
	for _, domains := range []int{10, 100} {
		for _, parts := range []bool{false, true} {
			name := fmt.Sprintf("domains=%d/whole", domains)
			if parts {
				name = fmt.Sprintf("domains=%d/incremental", domains)
			}
			b.Run(name, func(b *testing.B) { benchUpdate(b, domains, parts) })
		}
	}
}

func benchUpdate(b *testing.B, domains int, parts bool) {
	cfg := &Config{Machine: MachineSpec{CDC: usersDomains}, Parts: parts}
	c := New(cfg, "1")
	c.Init()
	off := int64(0)
	pos := func() record.Position { off++; return record.Position{Source: "cdc", Offset: off} }
	domain := func(id, v int) record.Row {
		return record.Row{"id": json.Number(fmt.Sprint(id)), "user_id": json.Number("1"),
			"name": fmt.Sprintf("domain-%d.example.com", id), "verified": v%2 == 0, "v": json.Number(fmt.Sprint(v))}
	}
	evs := []Event{{Side: record.Left, Op: record.OpCreate, After: record.Row{"id": json.Number("1"), "email": "u1@example.com", "plan": "pro"}, Pos: pos(), SrcPos: "0"}}
	for d := range domains {
		evs = append(evs, Event{Side: record.Right, Op: record.OpCreate, After: domain(d, 0), Pos: pos(), SrcPos: "0"})
	}
	step := func(req *Request) *Write {
		r := c.Step(req, 0)
		if r.Err != nil || r.Write == nil {
			b.Fatalf("step: %v, write %v", r.Err, r.Write)
		}
		c.Durable()
		return r.Write
	}
	step(&Request{Events: evs})
	var bytes int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		d := i % domains
		req := &Request{Committed: map[string]int64{"cdc/0": off},
			Events: []Event{{Side: record.Right, Op: record.OpUpdate, Before: domain(d, i), After: domain(d, i+1), Pos: pos(), SrcPos: fmt.Sprintf("%012d", i+1)}}}
		w := step(req)
		bytes += int64(len(w.State))
		for _, p := range w.Parts {
			bytes += int64(len(p.Name) + len(p.Value))
		}
	}
	b.ReportMetric(float64(bytes)/float64(b.N), "bytes/write")
}
