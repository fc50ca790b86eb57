package node

import (
	"context"
	"reflect"
	"strconv"
	"testing"

	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks"
)

type recordingSink struct{ got []record.Output }

func (s *recordingSink) Write(_ context.Context, b []record.Output) error {
	s.got = append(s.got, b...)
	return nil
}
func (s *recordingSink) Close() error { return nil }

var _ sinks.Sink = (*recordingSink)(nil)

// TestOutputsDropOvertakenChanges: a row's change that reaches the sinks
// after a newer change of the same row (two sources answering for one key
// separately) is not written to an upsert sink, so a consumer applying it
// in arrival order ends with the newest row; re-sent changes (same Seq) and
// unordered outputs (Seq 0) still go through. A changelog sink gets every
// change (its consumer orders them by seq).
func TestOutputsDropOvertakenChanges(t *testing.T) {
	out := func(id, pk string, seq uint64) record.Output {
		return record.Output{ID: id, PK: pk, Seq: seq}
	}
	tests := []struct {
		name    string
		batches [][]record.Output
		want    []string // ids written, in order
	}{
		{"in order", [][]record.Output{{out("a4", "p", 4)}, {out("a5", "p", 5)}}, []string{"a4", "a5"}},
		{"overtaken", [][]record.Output{{out("b5", "p", 5)}, {out("a4", "p", 4)}}, []string{"b5"}},
		{"overtaken inside a batch, others kept", [][]record.Output{{out("b5", "p", 5)}, {out("x1", "q", 1), out("a4", "p", 4), out("x2", "q", 2)}}, []string{"b5", "x1", "x2"}},
		{"re-sent", [][]record.Output{{out("a5", "p", 5)}, {out("a5", "p", 5)}}, []string{"a5", "a5"}},
		{"unordered", [][]record.Output{{out("t", "p", 5)}, {out("u", "p", 0)}}, []string{"t", "u"}},
		{"other rows", [][]record.Output{{out("a9", "p", 9)}, {out("b1", "q", 1)}}, []string{"a9", "b1"}},
	}
	retry := func(ctx context.Context, _ string, f func(context.Context) error) error { return f(ctx) }
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &recordingSink{}
			all := &recordingSink{} // a changelog sink: every change
			o := &outputs{sinks: []sinks.Sink{s, all}, latest: []bool{true, false}}
			for _, b := range tc.batches {
				in := append([]record.Output(nil), b...)
				if err := o.write(context.Background(), b, retry); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(in, b) {
					t.Fatalf("write modified its batch: %v, was %v", b, in)
				}
			}
			var ids []string
			for _, g := range s.got {
				ids = append(ids, g.ID)
			}
			if !reflect.DeepEqual(ids, tc.want) {
				t.Errorf("written %v, want %v", ids, tc.want)
			}
			var in []record.Output
			for _, b := range tc.batches {
				in = append(in, b...)
			}
			if !reflect.DeepEqual(all.got, in) {
				t.Errorf("the changelog sink got %v, want every change %v", all.got, in)
			}
		})
	}
}

// TestOutputsOrderWindow: the memory of written rows is bounded, and a row
// written within the last window is still remembered after a generation
// turns over.
func TestOutputsOrderWindow(t *testing.T) {
	var p pkOrder
	p.fresh([]record.Output{{PK: "old", Seq: 7}})
	for i := 0; i < orderWindow; i++ {
		p.fresh([]record.Output{{PK: strconv.Itoa(i), Seq: 1}})
	}
	if got := p.fresh([]record.Output{{PK: "old", Seq: 6}}); len(got) != 0 {
		t.Errorf("a change of a row from the previous generation was not dropped: %v", got)
	}
	if n := len(p.cur) + len(p.prev); n > 2*orderWindow {
		t.Errorf("%d rows remembered, bound %d", n, 2*orderWindow)
	}
}

// TestOutputsSinkSets: a write as the keys' owner (sharedSinks) reaches the
// shared sinks alone, a reader's write of outputs an owner already wrote
// (localSinks) the node-local sinks and the table alone, and each kind of
// upsert sink keeps its own order: a newer change the owner wrote to the
// shared sink does not make the reader drop an older one from its local
// sink, which never got the newer one.
func TestOutputsSinkSets(t *testing.T) {
	retry := func(ctx context.Context, _ string, f func(context.Context) error) error { return f(ctx) }
	ids := func(s *recordingSink) []string {
		var out []string
		for _, g := range s.got {
			out = append(out, g.ID)
		}
		return out
	}
	local, shared := &recordingSink{}, &recordingSink{}
	o := &outputs{sinks: []sinks.Sink{local, shared}, latest: []bool{true, true}, shared: []bool{false, true}}
	ctx := context.Background()
	if !o.hasShared() {
		t.Fatal("hasShared false with a shared sink")
	}
	steps := []struct {
		set   sinkSet
		batch []record.Output
	}{
		{sharedSinks, []record.Output{{ID: "b5", PK: "p", Seq: 5}}}, // the owner writes seq 5
		{localSinks, []record.Output{{ID: "a4", PK: "p", Seq: 4}}},  // the reader's own copy of seq 4
		{allSinks, []record.Output{{ID: "c6", PK: "p", Seq: 6}}},    // a local key: everywhere
		{sharedSinks, []record.Output{{ID: "a4", PK: "p", Seq: 4}}}, // overtaken on the shared sink
	}
	for _, st := range steps {
		if err := o.writeTo(ctx, st.set, st.batch, retry); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := ids(local), []string{"a4", "c6"}; !reflect.DeepEqual(got, want) {
		t.Errorf("local sink got %v, want %v", got, want)
	}
	if got, want := ids(shared), []string{"b5", "c6"}; !reflect.DeepEqual(got, want) {
		t.Errorf("shared sink got %v, want %v", got, want)
	}
	if written, err := (&outputs{sinks: []sinks.Sink{local}}).writeShared(ctx, []record.Output{{ID: "x"}}, retry); err != nil || written {
		t.Errorf("writeShared without a shared sink = %v, %v; want false (the sender writes)", written, err)
	}
}
