package debezium

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/record"
)

// edgeInputs are envelopes and near-envelopes at the edges of the rules:
// escapes, lone surrogates, exotic numbers, duplicate names, nesting,
// wrapped and truncated values, whitespace and trailing data.
var edgeInputs = []string{
	``, ` `, `null`, ` null `, `{`, `}`, `[]`, `"c"`, `42`, `-0`, `true`, "\xef\xbb\xbf{}",
	`{"after":{"id":1},"op":"c","ts_ms":1}`,
	`{"before":{"id":1,"v":1.5e300},"after":{"id":1,"v":"x"},"op":"u"}`,
	`{"before":{"id":1},"op":"d","after":{"id":[1,{"x":"\u00e9"}]}}`,
	`{"schema":{},"payload":{"after":{"a":[1,{"b":null}],"e":[],"o":{}},"op":"r"}}`,
	`{"schema":{},"payload":null}`, `{"schema":{},"payload":[1]}`, `{"payload":{"op":"c","after":{}},"op":null}`,
	`{"after":{"s":"\u00e9\ud800"},"op":"c"} `,
	`{"after":{"s":"\ud83d\ude00\\ud800\"\/\b\f\n\r\t"},"op":"c"}`,
	`{"after":{"\u0069d":1,"\"":2,"a\\b":3},"\u006fp":"\u0063"}`,
	`{"after":{"big":1e400,"neg0":-0,"dec":0.10,"huge":123456789012345678901234567890,"e":-1E-7,"z":0},"op":"c","ts_ms":-0}`,
	`{"after":{"id":1,"id":2,"id":{"a":1}},"op":"x","op":"c"}`,
	`{"after":{"id":1},"after":null,"op":"c"}`,
	`{"after":null,"after":{"id":1},"op":"c","ts_ms":"x","ts_ms":9223372036854775807}`,
	`{"after":{},"op":"c","ts_ms":-9223372036854775808}`,
	`{"after":{},"op":"c","ts_ms":9223372036854775808}`,
	`{"after":{},"op":"c","ts_ms":1e3}`,
	`{"after":{},"op":"c","ts_ms":[1]}`,
	`{"after":{},"op":"c"} x`, `{"after":{},"op":"c"}{}`, `{"after":{},"op":"c",}`, `{"after":{},"op":"c"`,
	`{"after":{"a":01},"op":"c"}`, `{"after":{"a":1.},"op":"c"}`, `{"after":{"a":+1},"op":"c"}`, `{"after":{"a":"\x"},"op":"c"}`,
	"{\"after\":{\"a\":\"\t\"},\"op\":\"c\"}", "{\"after\":{\"a\":\"\xff\"},\"op\":\"c\"}", "{\"after\":{\"a\":\"x\"},\"op\":\"c\"}\xff",
	`{"op":"t","source":{"table":"users","lsn":1}}`,
	`{"op":"\u0074","source":{"table":"u\u0073ers"}}`,
	`{"op":"x","source":{"table":"users","lsn":1}}`,
	`{"after":{"id":1},"op":"u","source":{"file":"b.1","pos":3,"row":1,"table":"t"}}`,
	`{"after":{"id":1},"op":"c","source":{"commit_lsn":"a","change_lsn":"b","event_serial_no":2}}`,
	`{"after":{"id":1},"op":"c","source":{"scn":"123","ts_ms":1,"ord":2}}`,
	`{"after":{"id":1},"op":"c","source":{"table":"t","table":7,"lsn":1,"lsn":-1,"snapshot":"true"}}`,
	`{"after":{"id":1},"op":"c","source":"users"}`,
	` { "after" : { "id" : [ 1 , 2 ] , "n" : null } , "op" : "c" , "source" : { "table" : "users" } } `,
	`{"after":{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{"b":[]}]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},"op":"c"}`,
}

// seedInputs are edgeInputs, the seed example's changes and a generated
// users ⋈ domains history.
func seedInputs(t testing.TB) [][]byte {
	var in [][]byte
	for _, s := range edgeInputs {
		in = append(in, []byte(s))
	}
	ex, err := os.ReadFile("../../examples/users-domains/changes.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	in = append(in, bytes.Split(bytes.TrimSpace(ex), []byte("\n"))...)
	h := cdcgen.Generate(cdcgen.Config{Seed: 3, Users: 8, Domains: 20, Changes: 30, Companies: 2})
	return append(in, h.Lines...)
}

// TestDecodeMatchesEncodingJSON: the decoder and the encoding/json one
// agree on every seed input, on DecodeObject too.
func TestDecodeMatchesEncodingJSON(t *testing.T) {
	pos := record.Position{Source: "s", Partition: 1, Offset: 2}
	for _, b := range seedInputs(t) {
		got, gerr := DecodeEnvelope(b, pos)
		want, werr := stdDecodeEnvelope(b, pos)
		sameOutcome(t, b, got, gerr, want, werr)
		row, rerr := DecodeObject(b, pos)
		wantRow, wrerr := stdDecodeObject(b, pos)
		sameOutcome(t, b, row, rerr, wantRow, wrerr)
	}
}

// TestDecodeNestingLimit: encoding/json refuses nesting deeper than
// 10,000; the decoder refuses exactly the same values.
func TestDecodeNestingLimit(t *testing.T) {
	pos := record.Position{Source: "s"}
	for _, n := range []int{9996, 9997, 9998, 9999, 10000} {
		b := []byte(`{"after":{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `},"op":"c"}`)
		got, gerr := DecodeEnvelope(b, pos)
		want, werr := stdDecodeEnvelope(b, pos)
		sameOutcome(t, b[:40], got, gerr, want, werr)
		gk, gkerr := DecodeEnvelopeKeep(b, pos, NewKeep(map[string][]string{"": {}}))
		if (gkerr == nil) != (werr == nil) || gerr == nil && len(gk.Change.After) != 0 {
			t.Fatalf("depth %d with the column dropped: %v, %v; want error %v", n, gk, gkerr, werr)
		}
	}
}

// FuzzDecodeMatchesEncodingJSON: on any bytes, DecodeEnvelope gives the
// same envelope or the same refusal as the encoding/json decoder, and
// DecodeObject the same row or refusal as encoding/json.
func FuzzDecodeMatchesEncodingJSON(f *testing.F) {
	for _, b := range seedInputs(f) {
		f.Add(b)
	}
	pos := record.Position{Source: "s", Partition: 1, Offset: 2}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gerr := DecodeEnvelope(b, pos)
		want, werr := stdDecodeEnvelope(b, pos)
		sameOutcome(t, b, got, gerr, want, werr)
		row, rerr := DecodeObject(b, pos)
		wantRow, wrerr := stdDecodeObject(b, pos)
		sameOutcome(t, b, row, rerr, wantRow, wrerr)
	})
}

// FuzzDecodeEnvelopeParts builds envelopes from fuzzed parts put into the
// text unescaped (so they may hold escapes, lone surrogates, quotes that
// break the syntax, exotic numbers), nested, duplicated and wrapped, and
// compares the decoder with the encoding/json one on each.
func FuzzDecodeEnvelopeParts(f *testing.F) {
	f.Add("id", `\ud83d\ude00`, "1e400", "c", uint8(0), uint8(0))
	f.Add(`\u0069d`, `\ud800`, "-0", "u", uint8(3), uint8(2))
	f.Add("firstname", `a\\ud800\"b`, "0.10", "d", uint8(12), uint8(40))
	f.Add("k", `\uDC00x`, "123456789012345678901234567890", "r", uint8(5), uint8(1))
	f.Add("", "\xff", "1E-400", `\u0074`, uint8(255), uint8(7))
	f.Add("a\"", `é\/`, "9223372036854775808", "c", uint8(16), uint8(0))
	pos := record.Position{Source: "s", Offset: 9}
	f.Fuzz(func(t *testing.T, key, str, num, op string, shape, depth uint8) {
		nest := strings.Repeat("[", int(depth)) + num + strings.Repeat("]", int(depth))
		row := fmt.Sprintf(`{"%s":"%s","n":%s,"deep":%s,"o":{"%s":%s}}`, key, str, num, nest, key, num)
		if shape&4 != 0 {
			row = fmt.Sprintf(`{"%s":"first",%s`, key, row[1:])
		}
		env := fmt.Sprintf(`{"before":%s,"after":%s,"op":"%s","ts_ms":%s,"source":{"table":"%s","lsn":%s}}`, row, row, op, num, str, num)
		if shape&2 != 0 {
			env = `{"op":"x","after":null,` + env[1:]
		}
		if shape&8 != 0 {
			env = strings.Replace(env, `"before":`, `"before":null,"after":"x","ts_ms":[],"before":`, 1)
		}
		if shape&16 != 0 {
			env = strings.ReplaceAll(env, ":", " :\n ")
		}
		if shape&1 != 0 {
			env = `{"schema":{"type":"struct"},"payload":` + env + `}`
		}
		b := []byte(env)
		got, gerr := DecodeEnvelope(b, pos)
		want, werr := stdDecodeEnvelope(b, pos)
		sameOutcome(t, b, got, gerr, want, werr)
		keep := NewKeep(map[string][]string{got.Table: {key, "n"}})
		kept, kerr := DecodeEnvelopeKeep(b, pos, keep)
		sameOutcome(t, b, kept, kerr, dropColumns(want, keep), werr)
	})
}

// dropColumns is e with the columns keep does not keep deleted from its
// rows (the rows are copied).
func dropColumns(e Envelope, keep *Keep) Envelope {
	cols, all := keep.Columns(e.Table)
	if all {
		return e
	}
	drop := func(r record.Row) record.Row {
		if r == nil {
			return nil
		}
		out := record.Row{}
		for _, c := range cols {
			if v, ok := r[c]; ok {
				out[c] = v
			}
		}
		return out
	}
	e.Change.Before, e.Change.After = drop(e.Change.Before), drop(e.Change.After)
	return e
}

// FuzzDecodeKeep: DecodeEnvelopeKeep is DecodeEnvelope with the columns
// the filter does not keep deleted, and a filter naming other tables only
// changes nothing.
func FuzzDecodeKeep(f *testing.F) {
	for i, b := range seedInputs(f) {
		f.Add(b, []string{"id,firstname", "user_id", "", "id,\"", "domain_name,id,id"}[i%5], i%3 == 0)
	}
	pos := record.Position{Source: "s", Partition: 3}
	f.Fuzz(func(t *testing.T, b []byte, cols string, other bool) {
		want, werr := DecodeEnvelope(b, pos)
		kcols := []string{}
		if cols != "" {
			kcols = strings.Split(cols, ",")
		}
		table := want.Table
		if other {
			table += "/other"
		}
		keep := NewKeep(map[string][]string{table: kcols})
		got, gerr := DecodeEnvelopeKeep(b, pos, keep)
		sameOutcome(t, b, got, gerr, dropColumns(want, keep), werr)
		all, aerr := DecodeEnvelopeKeep(b, pos, nil)
		sameOutcome(t, b, all, aerr, want, werr)
	})
}
