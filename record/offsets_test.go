package record

import (
	"slices"
	"testing"
)

// TestOffsetsSet: Set keeps the offsets in partition order, each partition
// once, and Get reads what Set wrote.
func TestOffsetsSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []PartitionOffset
		want Offsets
	}{
		{"none", nil, nil},
		{"one", []PartitionOffset{{"a/0", 1}}, Offsets{{"a/0", 1}}},
		{"inserted before", []PartitionOffset{{"b/0", 1}, {"a/0", 2}}, Offsets{{"a/0", 2}, {"b/0", 1}}},
		{"inserted between", []PartitionOffset{{"c/0", 1}, {"a/0", 2}, {"b/0", 3}}, Offsets{{"a/0", 2}, {"b/0", 3}, {"c/0", 1}}},
		{"replaced", []PartitionOffset{{"a/0", 1}, {"b/0", 2}, {"a/0", -5}}, Offsets{{"a/0", -5}, {"b/0", 2}}},
		{"byte order", []PartitionOffset{{"s/2", 1}, {"s/10", 2}, {"", 3}}, Offsets{{"", 3}, {"s/10", 2}, {"s/2", 1}}},
	} {
		var o Offsets
		for _, s := range tc.sets {
			o.Set(s.Partition, s.Offset)
		}
		if !slices.Equal(o, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, o, tc.want)
		}
		if err := o.Check(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		for _, w := range tc.want {
			if got, ok := o.Get(w.Partition); !ok || got != w.Offset {
				t.Errorf("%s: Get(%q) = %d, %v; want %d", tc.name, w.Partition, got, ok, w.Offset)
			}
		}
		if got, ok := o.Get("missing"); ok {
			t.Errorf("%s: Get(missing) = %d, true", tc.name, got)
		}
	}
}

// TestOffsetsMap: Map and OffsetsOf convert both ways, OffsetsOf sorting.
func TestOffsetsMap(t *testing.T) {
	m := map[string]int64{"z/1": 1, "a/0": 2, "m/3": -1}
	o := OffsetsOf(m)
	if want := (Offsets{{"a/0", 2}, {"m/3", -1}, {"z/1", 1}}); !slices.Equal(o, want) {
		t.Fatalf("OffsetsOf(%v) = %v, want %v", m, o, want)
	}
	if back := o.Map(); len(back) != len(m) || back["a/0"] != 2 || back["m/3"] != -1 || back["z/1"] != 1 {
		t.Errorf("Map = %v, want %v", back, m)
	}
	if o := OffsetsOf(map[string]int64{}); o != nil {
		t.Errorf("OffsetsOf(empty) = %v, want nil", o)
	}
	if m := Offsets(nil).Map(); m == nil || len(m) != 0 {
		t.Errorf("nil Map = %#v, want empty and not nil", m)
	}
}

// TestOffsetsCheckSort: Check refuses offsets out of order or with a
// partition twice; SortOffsets mends the first and still refuses the second.
func TestOffsetsCheckSort(t *testing.T) {
	for _, tc := range []struct {
		name     string
		o        Offsets
		inOrder  bool
		sortable bool
		sorted   Offsets
	}{
		{"nil", nil, true, true, nil},
		{"one", Offsets{{"a/0", 1}}, true, true, Offsets{{"a/0", 1}}},
		{"in order", Offsets{{"a/0", 1}, {"b/0", 2}}, true, true, Offsets{{"a/0", 1}, {"b/0", 2}}},
		{"reversed", Offsets{{"b/0", 2}, {"a/0", 1}}, false, true, Offsets{{"a/0", 1}, {"b/0", 2}}},
		{"shuffled", Offsets{{"b", 2}, {"c", 3}, {"a", 1}}, false, true, Offsets{{"a", 1}, {"b", 2}, {"c", 3}}},
		{"twice", Offsets{{"a/0", 1}, {"a/0", 2}}, false, false, nil},
		{"twice apart", Offsets{{"a/0", 1}, {"b/0", 1}, {"a/0", 2}}, false, false, nil},
	} {
		if err := tc.o.Check(); (err == nil) != tc.inOrder {
			t.Errorf("%s: Check = %v, want in order %v", tc.name, err, tc.inOrder)
		}
		o := slices.Clone(tc.o)
		err := SortOffsets(o)
		if (err == nil) != tc.sortable {
			t.Errorf("%s: SortOffsets = %v, want sortable %v", tc.name, err, tc.sortable)
		}
		if err == nil && !slices.Equal(o, tc.sorted) {
			t.Errorf("%s: sorted %v, want %v", tc.name, o, tc.sorted)
		}
	}
}

// TestOffsetsSetAllocs: changing a partition's offset allocates nothing
// (a key's usual write).
func TestOffsetsSetAllocs(t *testing.T) {
	o := Offsets{{"a/0", 1}, {"b/0", 2}}
	if n := testing.AllocsPerRun(100, func() { o.Set("b/0", 3) }); n != 0 {
		t.Errorf("Set of a held partition: %v allocations, want 0", n)
	}
}
