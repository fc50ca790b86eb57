package joins

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/joinery/joinery/record"
)

func seededKey(t testing.TB, spec *CDCSpec, steps []step, key record.Key) *CDC {
	j := NewCDC(spec)
	for _, s := range steps {
		evs, err := spec.Route(s.side, s.c)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Key == key {
				j.OnEvent(e, nil)
			}
		}
	}
	return j
}

func TestCDCSnapshot(t *testing.T) {
	spec := projSpec(LeftOuter)
	j := seededKey(t, spec, seed, "1")
	got := j.Snapshot()
	want := "\x01" + `{"l":{"id":1,"name":"Egor Myasnik"},"r":{` +
		`"1":{"id":1,"reason":"Approval","user_id":1},` +
		`"2":{"id":2,"reason":"Rejection","user_id":1},` +
		`"3":{"id":3,"reason":"Stoppage","user_id":1}}}`
	if string(got) != want {
		t.Fatalf("snapshot\n%q\nwant\n%q", got, want)
	}
	// Another arrival order gives the same bytes.
	reordered := []step{R(ins(d3)), R(ins(d1)), L(ins(egor1)), R(ins(d2))}
	if other := seededKey(t, spec, reordered, "1").Snapshot(); !bytes.Equal(other, got) {
		t.Fatalf("order-dependent snapshot %q", other)
	}
	r := NewCDC(spec)
	if err := r.Restore(got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Left(), j.Left()) || !reflect.DeepEqual(r.Rights(), j.Rights()) {
		t.Fatalf("restored %v %v", r.Left(), r.Rights())
	}
	// The restored state behaves as the original.
	e := record.Event{Key: "1", Side: record.Left, Op: record.OpDelete, Before: egor1}
	if a, b := j.OnEvent(e, nil), r.OnEvent(e, nil); !reflect.DeepEqual(a, b) {
		t.Fatalf("outputs differ after restore:\n%v\n%v", a, b)
	}
	if empty := NewCDC(spec).Snapshot(); string(empty) != "\x01"+`{"l":null}` {
		t.Fatalf("empty snapshot %q", empty)
	}
}

func TestCDCRestoreErrors(t *testing.T) {
	spec := projSpec(Inner)
	for name, b := range map[string]string{
		"empty":            "",
		"version 0":        "\x00{}",
		"version 2":        "\x02{}",
		"garbage":          "\x01{",
		"not an object":    "\x01[1]",
		"unknown field":    "\x01" + `{"x":1}`,
		"trailing data":    "\x01" + `{"l":null} {}`,
		"left lacks pk":    "\x01" + `{"l":{"name":"x"}}`,
		"right pk differs": "\x01" + `{"r":{"1":{"id":2}}}`,
		"right row null":   "\x01" + `{"r":{"1":null}}`,
	} {
		t.Run(name, func(t *testing.T) {
			j := seededKey(t, spec, seed, "3")
			before := j.Snapshot()
			err := j.Restore([]byte(b))
			if !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("err %v, want ErrBadSnapshot", err)
			}
			if after := j.Snapshot(); !bytes.Equal(after, before) {
				t.Fatalf("failed restore changed the state: %q", after)
			}
		})
	}
}

func FuzzCDCRestore(f *testing.F) {
	spec := projSpec(FullOuter)
	for _, k := range []record.Key{"1", "2", "3", "7"} {
		f.Add(seededKey(f, spec, seed, k).Snapshot())
	}
	for _, s := range []string{"", "\x00", "\x01", "\x01{}", "\x01null", "\x02{}", "\x01" + `{"l":{"id":"a"},"r":{"true":{"id":true}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		j := NewCDC(spec)
		if err := j.Restore(b); err != nil {
			if !j.Empty() {
				t.Fatal("failed restore left state behind")
			}
			return
		}
		s1 := j.Snapshot()
		k := NewCDC(spec)
		if err := k.Restore(s1); err != nil {
			t.Fatalf("restore of a snapshot %q: %v", s1, err)
		}
		if s2 := k.Snapshot(); !bytes.Equal(s1, s2) {
			t.Fatalf("round trip\n%q\n%q", s1, s2)
		}
		// The restored state must be usable.
		for _, e := range []record.Event{
			{Side: record.Left, Op: record.OpCreate, After: egor1},
			{Side: record.Right, Op: record.OpCreate, After: d1},
			{Side: record.Left, Op: record.OpDelete, Before: egor1},
		} {
			if a, b := j.OnEvent(e, nil), k.OnEvent(e, nil); !reflect.DeepEqual(a, b) {
				t.Fatalf("restored states diverge:\n%v\n%v", a, b)
			}
		}
	})
}
