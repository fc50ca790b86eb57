package streamshard

import (
	"bytes"
	"encoding/json"
	"testing"
)

// jsonArray is what a producer writes for a one-column key: a compact JSON
// array without HTML escaping, as record.Output.PK is.
func jsonArray(t testing.TB, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode([]any{v}); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// TestKeyJSON checks that a join key's group is the shard a producer that
// partitions by the join column puts its rows in: the key's text form
// (record.KeyOf) as a JSON array, as encoding/json writes the column.
func TestKeyJSON(t *testing.T) {
	tests := []struct {
		key string
		col any // the join column's value as the producer has it
	}{
		{"42", json.Number("42")},
		{"-7", json.Number("-7")},
		{"1.5e3", json.Number("1.5e3")},
		{"0", json.Number("0")},
		{"eu", "eu"},
		{"", ""},
		{"007", "007"}, // not a JSON number: a string column
		{"1.", "1."},
		{`a"b\c`, `a"b\c`},
		{"<&>", "<&>"},
		{"tab\there\nnl\b\f\x01", "tab\there\nnl\b\f\x01"},
		{"ünï\u2028cödé", "ünï\u2028cödé"},
	}
	for _, tt := range tests {
		want := jsonArray(t, tt.col)
		if got := KeyJSON(tt.key); !bytes.Equal(got, want) {
			t.Errorf("KeyJSON(%q) = %s, want %s", tt.key, got, want)
		}
		if got, want := KeyGroup(tt.key, 16), Of(want, 16); got != want {
			t.Errorf("KeyGroup(%q) = %d, want %d", tt.key, got, want)
		}
	}
}

// FuzzKeyJSON checks KeyJSON against encoding/json for string keys (those
// that are not JSON numbers) and that its output is always valid JSON.
func FuzzKeyJSON(f *testing.F) {
	for _, s := range []string{"1", "eu", `"`, "\x00", "\u2028", "-0.5E+2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		got := KeyJSON(key)
		var v []any
		if !json.Valid(got) {
			t.Fatalf("KeyJSON(%q) = %s: not JSON", key, got)
		}
		if isJSONNumber(key) {
			return
		}
		if err := json.Unmarshal(got, &v); err != nil || len(v) != 1 {
			t.Fatalf("KeyJSON(%q) = %s: %v", key, got, err)
		}
		if want := jsonArray(t, key); !bytes.Equal(got, want) {
			t.Errorf("KeyJSON(%q) = %s, want %s", key, got, want)
		}
	})
}
