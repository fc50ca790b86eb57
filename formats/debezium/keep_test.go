package debezium

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/joinery/joinery/record"
)

func TestKeepColumns(t *testing.T) {
	k := NewKeep(map[string][]string{"users": {"id", "lastname", "id", "firstname"}, "empty": nil})
	if cols, all := k.Columns("users"); all || !slices.Equal(cols, []string{"id", "lastname", "firstname"}) {
		t.Errorf("Columns(users) = %q, %v; want [id lastname firstname], false", cols, all)
	}
	if cols, all := k.Columns("empty"); all || len(cols) != 0 {
		t.Errorf("Columns(empty) = %q, %v; want none, false", cols, all)
	}
	if cols, all := k.Columns("domains"); !all || cols != nil {
		t.Errorf("Columns(domains) = %q, %v; want nil, true", cols, all)
	}
	var none *Keep
	if cols, all := none.Columns("users"); !all || cols != nil {
		t.Errorf("nil Keep: Columns(users) = %q, %v; want nil, true", cols, all)
	}
}

func TestDecodeEnvelopeKeep(t *testing.T) {
	keep := NewKeep(map[string][]string{
		"users":   {"id", "firstname"},
		"domains": {"user_id", "domain_name"},
		"nothing": {},
	})
	num := func(s string) json.Number { return json.Number(s) }
	for _, tc := range []struct {
		name, in      string
		before, after record.Row
		reason        string // of the refusal; "" when accepted
	}{
		{
			name:  "users keeps two of four",
			in:    `{"before":null,"after":{"id":1,"firstname":"Egor","lastname":"Myasnik","bio":{"a":[1,2]}},"op":"c","source":{"table":"users"}}`,
			after: record.Row{"id": num("1"), "firstname": "Egor"},
		},
		{
			name:   "both rows of an update",
			in:     `{"before":{"id":1,"user_id":7,"domain_name":"a"},"after":{"id":1,"user_id":8,"domain_name":"b","x":null},"op":"u","source":{"lsn":3,"table":"domains"}}`,
			before: record.Row{"user_id": num("7"), "domain_name": "a"},
			after:  record.Row{"user_id": num("8"), "domain_name": "b"},
		},
		{
			name:  "wrapped",
			in:    `{"schema":{},"payload":{"after":{"id":2,"lastname":"x"},"op":"r","source":{"table":"users"}}}`,
			after: record.Row{"id": num("2")},
		},
		{
			name:  "an escaped column name is kept by its value",
			in:    `{"after":{"\u0069d":3,"first\u006eame":"\u00e9"},"op":"c","source":{"table":"users"}}`,
			after: record.Row{"id": num("3"), "firstname": "é"},
		},
		{
			name:  "the last of duplicate columns is kept",
			in:    `{"after":{"id":1,"id":2,"lastname":1,"lastname":2},"op":"c","source":{"table":"users"}}`,
			after: record.Row{"id": num("2")},
		},
		{
			name:  "a table the filter does not name keeps every column",
			in:    `{"after":{"id":1,"v":[true]},"op":"c","source":{"table":"other"}}`,
			after: record.Row{"id": num("1"), "v": []any{true}},
		},
		{
			name:  "no source keeps every column",
			in:    `{"after":{"id":1,"v":"x"},"op":"c"}`,
			after: record.Row{"id": num("1"), "v": "x"},
		},
		{
			name:  "an empty list keeps an empty row",
			in:    `{"after":{"id":1,"v":"x"},"op":"c","source":{"table":"nothing"}}`,
			after: record.Row{},
		},
		{name: "a dropped column with a lone surrogate", in: `{"after":{"id":1,"lastname":"\ud800"},"op":"c","source":{"table":"users"}}`, reason: ReasonBadUTF8},
		{name: "a dropped column not UTF-8", in: "{\"after\":{\"id\":1,\"lastname\":\"\xc3\"},\"op\":\"c\",\"source\":{\"table\":\"users\"}}", reason: ReasonBadUTF8},
		{name: "a dropped column not JSON", in: `{"after":{"id":1,"lastname":[1,}},"op":"c","source":{"table":"users"}}`, reason: ReasonNotJSON},
		{name: "a dropped column with a bad escape", in: `{"after":{"id":1,"lastname":"\q"},"op":"c","source":{"table":"users"}}`, reason: ReasonNotJSON},
		{name: "a bad row is refused before the filter", in: `{"after":[1],"op":"c","source":{"table":"users"}}`, reason: ReasonBadRow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeEnvelopeKeep([]byte(tc.in), testPos, keep)
			all, allErr := DecodeEnvelope([]byte(tc.in), testPos)
			if tc.reason != "" {
				var de *DecodeError
				if !errors.As(err, &de) || de.Reason != tc.reason {
					t.Fatalf("DecodeEnvelopeKeep = %v, want %s", err, tc.reason)
				}
				if !reflect.DeepEqual(err, allErr) {
					t.Fatalf("DecodeEnvelopeKeep = %v; DecodeEnvelope = %v", err, allErr)
				}
				return
			}
			if err != nil || allErr != nil {
				t.Fatalf("DecodeEnvelopeKeep: %v; DecodeEnvelope: %v", err, allErr)
			}
			if !reflect.DeepEqual(got.Change.Before, tc.before) || !reflect.DeepEqual(got.Change.After, tc.after) {
				t.Fatalf("rows = %#v, %#v; want %#v, %#v", got.Change.Before, got.Change.After, tc.before, tc.after)
			}
			if got.Table != all.Table || got.SourcePos != all.SourcePos || got.Change.Op != all.Change.Op || got.Change.TsMs != all.Change.TsMs {
				t.Fatalf("envelope %+v differs from DecodeEnvelope's %+v beyond its rows", got, all)
			}
			if !reflect.DeepEqual(got, dropColumns(all, keep)) {
				t.Fatalf("DecodeEnvelopeKeep = %#v, want DecodeEnvelope's without the dropped columns %#v", got, dropColumns(all, keep))
			}
		})
	}
}

// TestDecodeDuplicateNames: encoding/json keeps the last of duplicate
// names in a map, at every level; so does the decoder.
func TestDecodeDuplicateNames(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   record.Change
		reason string
	}{
		{in: `{"after":{"id":1,"id":"two"},"op":"c"}`, want: record.Change{Op: record.OpCreate, After: record.Row{"id": "two"}}},
		{in: `{"after":{"id":1},"op":"x","op":"r","ts_ms":"bad","ts_ms":4}`, want: record.Change{Op: record.OpRead, After: record.Row{"id": json.Number("1")}, TsMs: 4}},
		{in: `{"after":{"id":1},"after":null,"op":"c"}`, reason: ReasonMissingAfter},
		{in: `{"after":{"a":{"b":1,"b":2}},"op":"c"}`, want: record.Change{Op: record.OpCreate, After: record.Row{"a": map[string]any{"b": json.Number("2")}}}},
		{in: `{"schema":{},"payload":null,"payload":{"after":{},"op":"c"}}`, want: record.Change{Op: record.OpCreate, After: record.Row{}}},
	} {
		got, err := Decode([]byte(tc.in), testPos)
		want, werr := stdDecodeEnvelope([]byte(tc.in), testPos)
		sameOutcome(t, []byte(tc.in), Envelope{Change: got}, err, Envelope{Change: want.Change}, werr)
		if tc.reason != "" {
			var de *DecodeError
			if !errors.As(err, &de) || de.Reason != tc.reason {
				t.Errorf("%s: %v, want %s", tc.in, err, tc.reason)
			}
			continue
		}
		tc.want.Pos = testPos
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
	}
}

func TestDecodeObject(t *testing.T) {
	keep := NewKeep(map[string][]string{"t": {"a"}})
	for _, tc := range []struct {
		in     string
		want   record.Row
		kept   record.Row
		reason string
	}{
		{in: ` {"a":1.50,"b":[{}],"c":null} `, want: record.Row{"a": json.Number("1.50"), "b": []any{map[string]any{}}, "c": nil}, kept: record.Row{"a": json.Number("1.50")}},
		{in: `{}`, want: record.Row{}, kept: record.Row{}},
		{in: ``, reason: ReasonNotJSON},
		{in: `{"a":1} {}`, reason: ReasonNotJSON},
		{in: `null`, reason: ReasonNotObject},
		{in: `[{"a":1}]`, reason: ReasonNotObject},
		{in: `{"b":"\udc00","a":1}`, reason: ReasonBadUTF8},
	} {
		got, err := DecodeObject([]byte(tc.in), testPos)
		kept, kerr := DecodeObjectKeep([]byte(tc.in), testPos, keep, "t")
		if tc.reason != "" {
			var de, dk *DecodeError
			if !errors.As(err, &de) || de.Reason != tc.reason || !errors.As(kerr, &dk) || dk.Reason != tc.reason {
				t.Errorf("%s: %v, %v; want %s", tc.in, err, kerr, tc.reason)
			}
			continue
		}
		if err != nil || kerr != nil || !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(kept, tc.kept) {
			t.Errorf("%s: %#v, %v and kept %#v, %v; want %#v and %#v", tc.in, got, err, kept, kerr, tc.want, tc.kept)
		}
	}
}
