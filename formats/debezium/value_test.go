package debezium

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/joinery/joinery/record"
)

// slowValue is what fastValue stands in for: encoding/json with
// UseNumber, one value and nothing after it.
func slowValue(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

var fastValueCases = []string{
	`{"after":{"id":1,"v":-0.5e+10,"s":"a\"b\\c\/\b\f\n\r\t\u00e9\uD83D\uDE00"},"op":"c","ts_ms":1}`,
	` [1, 2.0, -3e2, true, false, null, "x", [], {}, [[]], {"a":{"b":[{}]}}] `,
	`{"a":1,"a":2}`, `"é☃"`, `0`, `-0`, `12345678901234567890123`, `1E-7`, `""`, `"\u0000"`,
	// refused (or left to encoding/json)
	``, ` `, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `01`, `1.`, `.5`, `+1`, `1e`, `-`, `--1`,
	`tru`, `nul`, `True`, `"a`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\tb\"", `{} {}`, `{}x`, `1 2`,
	`"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\ud800x"`, `{"a":1}` + "\x00",
}

// TestFastValue: fastValue decodes what encoding/json decodes, to the same
// value, and refuses what encoding/json refuses.
func TestFastValue(t *testing.T) {
	for _, s := range fastValueCases {
		checkFastValue(t, []byte(s))
	}
	deep := strings.Repeat("[", maxDepth+5) + strings.Repeat("]", maxDepth+5)
	if _, ok := fastValue([]byte(deep)); ok {
		t.Errorf("fastValue took a value nested %d deep (its limit %d)", maxDepth+5, maxDepth)
	}
	if _, ok := fastValue([]byte(`{"a":1}`)); !ok {
		t.Error("fastValue refused a plain object")
	}
}

func FuzzFastValue(f *testing.F) {
	for _, s := range fastValueCases {
		f.Add([]byte(s))
	}
	f.Fuzz(checkFastValue)
}

// checkFastValue: whenever fastValue takes b, encoding/json takes it and
// decodes the same value (b not UTF-8 aside: the caller refuses it
// anyway); fastValue refuses only what is bad JSON, a lone surrogate
// escape or nested too deep.
func checkFastValue(t *testing.T, b []byte) {
	fast, fok := fastValue(b)
	slow, sok := slowValue(b)
	if !utf8.Valid(b) {
		if fok && !sok {
			t.Fatalf("fastValue took %q, which encoding/json refuses", b)
		}
		return
	}
	if fok {
		if !sok {
			t.Fatalf("fastValue took %q, which encoding/json refuses", b)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fastValue(%q) = %#v, encoding/json %#v", b, fast, slow)
		}
		return
	}
	if sok && !bytes.Contains(bytes.ToLower(b), []byte(`\ud`)) && !bytes.Contains(b, bytes.Repeat([]byte("["), maxDepth)) && !bytes.Contains(b, bytes.Repeat([]byte("{"), maxDepth)) {
		t.Errorf("fastValue refused %q, which encoding/json decodes", b)
	}
}

// BenchmarkDecode decodes a Debezium envelope of the cdc benchmark's
// shape:
//
//	go test -run '^$' -bench BenchmarkDecode -benchmem ./formats/debezium/
func BenchmarkDecode(b *testing.B) {
	line := []byte(`{"before":null,"after":{"id":12345,"user_id":678,"name":"domain-12345.example.com","verified":true,"created_at":"2024-01-02T03:04:05Z"},` +
		`"source":{"version":"2.5.0","connector":"postgresql","name":"db","ts_ms":1700000000000,"db":"app","schema":"public","table":"domains","lsn":123456789},"op":"c","ts_ms":1700000000001}`)
	b.ReportAllocs()
	for range b.N {
		if _, err := DecodeEnvelope(line, record.Position{}); err != nil {
			b.Fatal(err)
		}
	}
}
