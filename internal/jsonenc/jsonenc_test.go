package jsonenc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/joinery/joinery/record"
)

func stdEncode(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func TestAppendValueEqualsEncodingJSON(t *testing.T) {
	for i, v := range []any{
		nil, true, false, "", "plain", "<a href=\"x\">&</a>", "\x00\x01\b\f\n\r\t\x1f\x7f\\",
		"a\xffb\xc3", "x\u2028y\u2029z", "héllo ☃ 🎉",
		0.0, math.Copysign(0, -1), 1e-7, 1e-6, 123456789.0, 1e20, 1e21, 1.5e300, -2.5e-10, 0.1, math.MaxFloat64, math.SmallestNonzeroFloat64,
		json.Number("12.50"), json.Number(""),
		[]any{}, []any{"x", nil, 1.0}, []any(nil),
		map[string]any{}, map[string]any(nil), map[string]any{"z": 1.0, "a": []any{map[string]any{"k": "v"}}, "m": "x"},
		record.Row{"k": "v", "b": record.Row{"c": nil}}, record.Row(nil),
		wideObject(16), wideObject(40), // AppendObject's two sorts: its own (up to 16 keys) and slices'
	} {
		got, ok := AppendValue(nil, v)
		if !ok {
			t.Errorf("%d: AppendValue(%#v) refused", i, v)
			continue
		}
		if want := stdEncode(t, v); !bytes.Equal(got, want) {
			t.Errorf("%d: AppendValue(%#v)\n got %s\nwant %s", i, v, got, want)
		}
	}
	for _, v := range []any{3, int64(4), math.NaN(), math.Inf(-1), json.Number("1x"), struct{}{}, []string{"a"}, map[string]any{"a": 1}} {
		if _, ok := AppendValue(nil, v); ok {
			t.Errorf("AppendValue(%#v) took a value outside the fast path", v)
		}
	}
}

// wideObject is an object of n keys, inserted out of order ("k39" before
// "k4" and "k10" before "k9" in the sorted output).
func wideObject(n int) map[string]any {
	m := make(map[string]any, n)
	for i := n - 1; i >= 0; i-- {
		m[fmt.Sprintf("k%d", i)] = float64(i)
	}
	return m
}

func FuzzAppendValue(f *testing.F) {
	f.Add("v<>&\u2028", 1.5)
	f.Add("\xff\x00", 1e-9)
	f.Fuzz(func(t *testing.T, s string, x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		v := map[string]any{s: s, "x": x, "l": []any{s, x, nil, true}}
		got, ok := AppendValue(nil, v)
		if !ok {
			t.Fatal("refused")
		}
		if want := stdEncode(t, v); !bytes.Equal(got, want) {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
		if want, _ := json.Marshal(v); !bytes.Equal(AppendHTMLEscaped(nil, got), want) {
			t.Errorf("escaped\n got %s\nwant %s", AppendHTMLEscaped(nil, got), want)
		}
	})
}

// TestAppendHTMLEscaped: escaping what AppendValue writes gives what
// json.Marshal (HTML escaping on) writes, also when src is b's own bytes.
func TestAppendHTMLEscaped(t *testing.T) {
	for i, v := range []any{
		"plain", "<a href=\"x\">&amp;</a>", "&", "<<>>", "x\u2028<\xff>",
		map[string]any{"<k>": "a&b", "n": json.Number("1.5"), "l": []any{"<", 2.0, nil}},
		record.Row{"url": "https://x/?a=1&b=2", "s": "no markup"},
	} {
		plain, ok := AppendValue(nil, v)
		if !ok {
			t.Fatalf("%d: AppendValue(%#v) refused", i, v)
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendHTMLEscaped([]byte("pre"), plain); string(got) != "pre"+string(want) {
			t.Errorf("%d: AppendHTMLEscaped\n got %s\nwant pre%s", i, got, want)
		}
		self := append([]byte("pre"), plain...)
		if got := AppendHTMLEscaped(self, self[3:]); string(got) != "pre"+string(plain)+string(want) {
			t.Errorf("%d: AppendHTMLEscaped of its own bytes\n got %s\nwant pre%s%s", i, got, plain, want)
		}
	}
}

// validNumberCases are table and seed inputs of ValidNumber.
var validNumberCases = []string{"0", "-0", "1", "-12", "10.5", "0.0", "1e5", "1E+5", "-1.25e-10", "123456789012345678901234567890",
	"", "-", "01", "1.", ".5", "+1", "1e", "1e+", "0x1", " 1", "1 ", "NaN", "1.5.2", "--1", "1e5e5", "١"}

// TestValidNumber: ValidNumber accepts exactly what encoding/json
// accepts as a json.Number to encode.
func TestValidNumber(t *testing.T) {
	for _, s := range validNumberCases {
		checkValidNumber(t, s)
	}
}

func FuzzValidNumber(f *testing.F) {
	for _, s := range validNumberCases {
		f.Add(s)
	}
	f.Fuzz(checkValidNumber)
}

func checkValidNumber(t *testing.T, s string) {
	if s == "" {
		return // encoding/json writes an empty json.Number as 0
	}
	_, err := json.Marshal(json.Number(s))
	if got := ValidNumber(s); got != (err == nil) {
		t.Errorf("ValidNumber(%q) = %v, encoding/json's error %v", s, got, err)
	}
}

// TestExact: Exact returns what the function appends, in a slice with no
// spare capacity and not shared with the next call's; nil when it fails.
func TestExact(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	var prev []byte
	for _, s := range []string{"a", big, "bc", ""} {
		b, ok := Exact(func(b []byte) ([]byte, bool) { return AppendString(b, s), true })
		if !ok || string(b) != strconv.Quote(s) || cap(b) != len(b) {
			t.Fatalf("Exact(%.10q…) = %.20q (len %d cap %d), %v", s, b, len(b), cap(b), ok)
		}
		if s == "a" {
			prev = b
		}
	}
	if string(prev) != `"a"` {
		t.Fatalf("the first result changed to %q", prev)
	}
	if b, ok := Exact(func(b []byte) ([]byte, bool) { return append(b, "x"...), false }); ok || b != nil {
		t.Fatalf("failed: %q, %v", b, ok)
	}
}

// BenchmarkAppendObject encodes a row of ten columns, an output row's size.
func BenchmarkAppendObject(b *testing.B) {
	m := map[string]any{"id": 42.0, "name": "a name", "email": "x@example.com", "score": 3.5, "active": true,
		"city": "Lyon", "zip": "69001", "created": "2026-12-05T04:00:00Z", "tags": []any{"a", "b"}, "note": nil}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = AppendObject(buf[:0], m)
	}
}
