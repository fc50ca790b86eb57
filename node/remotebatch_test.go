package node

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/joinery/joinery/actors/keypb"
)

// TestGroupByOwner: one group per owner node, in the order of its first
// call, each holding its calls in batch order; calls not sent remotely
// ("") are in none.
func TestGroupByOwner(t *testing.T) {
	for _, tc := range []struct {
		name   string
		owners []string
		want   []ownerGroup
	}{
		{name: "none"},
		{name: "all local", owners: []string{"", "", ""}},
		{name: "one owner", owners: []string{"a", "a", "a"}, want: []ownerGroup{{"a", []int{0, 1, 2}}}},
		{name: "interleaved", owners: []string{"b", "a", "", "b", "c", "a", "b"},
			want: []ownerGroup{{"b", []int{0, 3, 6}}, {"a", []int{1, 5}}, {"c", []int{4}}}},
		{name: "local first", owners: []string{"", "x", "", "y", "x"}, want: []ownerGroup{{"x", []int{1, 4}}, {"y", []int{3}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := groupByOwner(tc.owners)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("groupByOwner(%q) = %v, want %v", tc.owners, got, tc.want)
			}
			// Every remote call is in exactly one group, its own owner's.
			seen := map[int]bool{}
			for _, g := range got {
				for j, i := range g.calls {
					if tc.owners[i] != g.owner || seen[i] || (j > 0 && g.calls[j-1] >= i) {
						t.Fatalf("call %d misplaced in %v", i, got)
					}
					seen[i] = true
				}
			}
			for i, o := range tc.owners {
				if o != "" && !seen[i] {
					t.Fatalf("call %d (owner %s) in no group", i, o)
				}
			}
		})
	}
}

type fixedAnswer struct {
	res   any
	err   error
	calls int
}

func (f *fixedAnswer) Result(context.Context) (any, error) { f.calls++; return f.res, f.err }

// TestBatchPartResult: each key's part of a batch answer is what a single
// request's future would give, so await treats it the same: a refusal (a
// gap) stays the key's own, a dead letter or timeout at the owner becomes
// actor.ErrDeadLetter or actor.ErrTimeout, and a failed or malformed batch
// fails each of its keys.
func TestBatchPartResult(t *testing.T) {
	gap := &keypb.Applied{Gap: true, Error: "gap"}
	ok := &keypb.Applied{Skipped: 2}
	whole := &fixedAnswer{res: &keypb.AppliedBatch{Applied: []*keypb.Applied{ok, gap, {DeadLetter: true}, {Timeout: true}, nil}}}
	rb := &remoteBatch{fut: whole, size: 5}
	for _, tc := range []struct {
		i       int
		want    *keypb.Applied
		wantErr error
	}{
		{i: 1, want: gap}, // out of order on purpose: parts are independent
		{i: 0, want: ok},
		{i: 2, wantErr: actor.ErrDeadLetter},
		{i: 3, wantErr: actor.ErrTimeout},
		{i: 4, wantErr: errors.New("any")},
	} {
		res, err := batchPart{b: rb, i: tc.i}.Result(context.Background())
		switch {
		case tc.wantErr != nil && err == nil:
			t.Errorf("part %d: %v, want an error", tc.i, res)
		case tc.wantErr != nil && tc.wantErr.Error() != "any" && !errors.Is(err, tc.wantErr):
			t.Errorf("part %d: error %v, want %v", tc.i, err, tc.wantErr)
		case tc.wantErr == nil && (err != nil || res != tc.want):
			t.Errorf("part %d: %v, %v; want %v", tc.i, res, err, tc.want)
		}
	}
	if whole.calls != 1 {
		t.Errorf("the batch future was awaited %d times, want once", whole.calls)
	}
	for name, fut := range map[string]*fixedAnswer{
		"batch failed": {err: actor.ErrTimeout},
		"short answer": {res: &keypb.AppliedBatch{Applied: []*keypb.Applied{ok}}},
		"wrong type":   {res: &keypb.Applied{}},
	} {
		rb := &remoteBatch{fut: fut, size: 2}
		for i := range 2 {
			if res, err := (batchPart{b: rb, i: i}).Result(context.Background()); err == nil {
				t.Errorf("%s: part %d answered %v", name, i, res)
			}
		}
	}
}
