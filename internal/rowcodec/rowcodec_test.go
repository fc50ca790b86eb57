package rowcodec

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/record"
)

func jsonRow(t testing.TB, s string) record.Row {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var r record.Row
	if err := d.Decode(&r); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return r
}

var rows = []struct {
	name, json string
	size       int // encoded bytes; 0: not checked
}{
	{"empty", `{}`, 2},
	{"users", `{"firstname":"F2020-36","id":2020,"lastname":"L216"}`, 43},
	{"domains", `{"domain_name":"d10555-12","id":10555,"user_id":2020}`, 0},
	{"null and bools", `{"a":null,"b":true,"c":false}`, 11},
	{"numbers", `{"big":123456789012345678901234567890,"e":1e400,"f":0.10,"max":9223372036854775807,"min":-9223372036854775808,"negzero":-0,"over":9223372036854775808,"zero":0}`, 0},
	{"strings", `{"esc":"a\"b\\c\n\u0000<>&\u2028","empty":"","uni":"한국어 中文"}`, 0},
	{"nested", `{"arr":[1,"x",null,{"k":[]}],"obj":{"z":1,"a":{"b":2.50}}}`, 0},
	{"names", `{"":1,"a b":2,"ü":3}`, 0},
}

func TestRowcodecRoundTrip(t *testing.T) {
	for _, c := range rows {
		t.Run(c.name, func(t *testing.T) {
			r := jsonRow(t, c.json)
			b, ok := Encode(r)
			if !ok {
				t.Fatal("not encoded")
			}
			if !IsCompact(b) {
				t.Fatalf("no tag: % x", b)
			}
			if c.size > 0 && len(b) != c.size {
				t.Errorf("%d bytes, want %d (JSON %d)", len(b), c.size, len(c.json))
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, r) {
				t.Fatalf("decoded %#v, want %#v", got, r)
			}
			want, ok := jsonenc.AppendValue(nil, r)
			if !ok {
				t.Fatal("jsonenc")
			}
			j, err := AppendJSON(nil, b)
			if err != nil || !bytes.Equal(j, want) {
				t.Fatalf("AppendJSON %s (%v), want %s", j, err, want)
			}
		})
	}
}

func TestRowcodecNotCovered(t *testing.T) {
	for _, r := range []record.Row{
		{"f": 1.5},
		{"i": 3},
		{"n": json.Number("1x")},
		{"n": json.Number("")},
		{"deep": map[string]any{"f": 2.0, "c": make(chan int)}},
	} {
		if _, ok := Encode(r); ok {
			t.Errorf("%v encoded", r)
		}
	}
}

func TestRowcodecBadInput(t *testing.T) {
	good, _ := Encode(record.Row{"a": "x", "b": json.Number("1")})
	for name, b := range map[string][]byte{
		"json":        []byte(`{"a":1}`),
		"empty":       nil,
		"truncated":   good[:len(good)-1],
		"trailing":    append(append([]byte(nil), good...), 0),
		"unknown tag": {Tag, 1, 1, 'a', 0x7f},
		"order":       {Tag, 2, 1, 'b', tNull, 1, 'a', tNull},
		"length":      {Tag, 1, 9, 'a'},
		"bad number":  {Tag, 1, 1, 'a', tNumber, 2, '1', 'x'},
		"bad nested":  {Tag, 1, 1, 'a', tJSON, 2, '{', '}' + 1},
	} {
		if _, err := Decode(b); !errors.Is(err, ErrBad) {
			t.Errorf("%s: Decode err %v", name, err)
		}
		if _, err := AppendJSON(nil, b); err == nil {
			t.Errorf("%s: AppendJSON accepted it", name)
		}
	}
}

// FuzzRowcodec: every JSON object round-trips (decoded value and JSON text),
// and Decode of arbitrary bytes either fails or gives a row that
// round-trips.
func FuzzRowcodec(f *testing.F) {
	for _, c := range rows {
		f.Add([]byte(c.json))
		b, _ := Encode(jsonRow(f, c.json))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if IsCompact(in) {
			r, err := Decode(in)
			if err != nil {
				return
			}
			b, ok := Encode(r)
			if !ok {
				t.Fatalf("Decode(% x) = %v does not encode", in, r)
			}
			if again, err := Decode(b); err != nil || !reflect.DeepEqual(again, r) {
				t.Fatalf("Decode(% x) = %v, re-encoded and decoded %v (%v)", in, r, again, err)
			}
			return
		}
		d := json.NewDecoder(bytes.NewReader(in))
		d.UseNumber()
		var r record.Row
		if d.Decode(&r) != nil || r == nil {
			return
		}
		b, ok := Encode(r)
		if !ok {
			return // an invalid json.Number cannot come from the decoder; any other type neither
		}
		got, err := Decode(b)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("%s: decoded %v (%v)", in, got, err)
		}
		want, _ := jsonenc.AppendValue(nil, r)
		if j, err := AppendJSON(nil, b); err != nil || !bytes.Equal(j, want) {
			t.Fatalf("%s: AppendJSON %s (%v), want %s", in, j, err, want)
		}
	})
}

func BenchmarkRowcodec(b *testing.B) {
	r := jsonRow(b, rows[1].json)
	enc, _ := Encode(r)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = Append(buf[:0], r)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = Decode(enc)
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = AppendJSON(buf[:0], enc)
		}
	})
}

func TestRowcodecGet(t *testing.T) {
	r := jsonRow(t, `{"a":null,"b":"x","c":12,"d":1.5,"e":{"k":[1]},"f":true}`)
	b, _ := Encode(r)
	for k, want := range r {
		got, ok := Get(b, k)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("Get(%q) = %#v, %v; want %#v", k, got, ok, want)
		}
	}
	if v, ok := Get(b, "zz"); ok || v != nil {
		t.Errorf("Get of a missing column = %v, %v", v, ok)
	}
	if _, ok := Get([]byte(`{"a":1}`), "a"); ok {
		t.Error("Get read JSON")
	}
}

func BenchmarkRowcodecGet(b *testing.B) {
	enc, _ := Encode(jsonRow(b, rows[1].json))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = Get(enc, "lastname")
	}
}
