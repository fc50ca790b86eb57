package debeziumavro

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/hamba/avro/v2"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/record"
)

// scalarUnion is the Avro type of an output column: the job file does not
// type columns, so a value is whichever of these fits (a JSON integer is a
// long, another number a double; a nested object or array is its JSON text).
const scalarUnion = `["null","long","double","string","boolean"]`

var nameRE = regexp.MustCompile(`[^A-Za-z0-9_]`)

// avroName makes s a valid Avro name part.
func avroName(s string) string {
	s = nameRE.ReplaceAllString(s, "_")
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "_" + s
	}
	return s
}

// OutputSchema is the Avro schema of the join outputs of job name in
// format f (changelog.Changelog, Upsert or Debezium), with the same fields
// as the format's JSON lines (see formats/changelog). With columns (the
// job's projection) a row is a record of those columns, each nullable and
// of the types in scalarUnion; without, a map of them. pk is an array.
func OutputSchema(f changelog.Format, name string, columns []string) (string, error) {
	ns := "joinery." + avroName(name)
	row := `{"type":"map","values":` + scalarUnion + `}`
	after := row // the Debezium envelope's second row type: a named record is referred to by name
	if len(columns) > 0 {
		var fs []string
		seen := map[string]bool{}
		for _, c := range columns {
			if !fieldRE.MatchString(c) || seen[c] {
				return "", fmt.Errorf("debeziumavro: column %q is not a valid (or unique) Avro field name", c)
			}
			seen[c] = true
			fs = append(fs, fmt.Sprintf(`{"name":%q,"type":%s,"default":null}`, c, scalarUnion))
		}
		row = `{"type":"record","name":"Row","fields":[` + strings.Join(fs, ",") + `]}`
		after = `"Row"`
	}
	pk := `["null",{"type":"array","items":` + scalarUnion + `}]`
	optLong := `["null","long"],"default":null`
	switch f {
	case changelog.Changelog:
		return `{"type":"record","name":"Change","namespace":"` + ns + `","fields":[` +
			`{"name":"id","type":"string"},{"name":"op","type":"string"},{"name":"pk","type":` + pk + `},` +
			`{"name":"row","type":["null",` + row + `],"default":null},` +
			`{"name":"ts","type":` + optLong + `},{"name":"seq","type":` + optLong + `}]}`, nil
	case changelog.Upsert:
		return `{"type":"record","name":"Upsert","namespace":"` + ns + `","fields":[` +
			`{"name":"id","type":"string"},{"name":"key","type":` + pk + `},` +
			`{"name":"value","type":["null",` + row + `],"default":null},` +
			`{"name":"seq","type":` + optLong + `}]}`, nil
	case changelog.Debezium:
		return `{"type":"record","name":"Envelope","namespace":"` + ns + `","fields":[` +
			`{"name":"before","type":["null",` + row + `],"default":null},` +
			`{"name":"after","type":["null",` + after + `],"default":null},` +
			`{"name":"op","type":"string"},` +
			`{"name":"source","type":{"type":"record","name":"Source","fields":[` +
			`{"name":"connector","type":"string"},{"name":"id","type":"string"},{"name":"pk","type":` + pk + `},` +
			`{"name":"seq","type":` + optLong + `},{"name":"ts_ms","type":` + optLong + `}]}}]}`, nil
	}
	return "", fmt.Errorf("debeziumavro: no Avro schema for format %v", f)
}

var fieldRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// OutputEncoder encodes join outputs as Avro in the Confluent wire format.
type OutputEncoder struct {
	format changelog.Format
	enc    *Encoder
}

// NewOutputEncoder returns an encoder of outputs in format f with schema
// (OutputSchema's text), registered under id.
func NewOutputEncoder(f changelog.Format, schema string, id int) (*OutputEncoder, error) {
	s, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("debeziumavro: output schema: %w", err)
	}
	return &OutputEncoder{format: f, enc: NewEncoder(s, id)}, nil
}

// Encode encodes o as its format's JSON line would be, in Avro. ok is
// false when the format drops o (-U in upsert and debezium).
func (e *OutputEncoder) Encode(o record.Output) (value []byte, ok bool, err error) {
	line, ok, err := e.format.Marshal(o)
	if err != nil || !ok {
		return nil, ok, err
	}
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, false, fmt.Errorf("debeziumavro: output %s: %w", o.ID, err)
	}
	for _, k := range []string{"row", "value", "before", "after"} {
		flatten(m[k])
	}
	if src, ok := m["source"].(map[string]any); ok {
		flatten(src["pk"])
	}
	flatten(m["pk"])
	flatten(m["key"])
	b, err := e.enc.Encode(m)
	if err != nil {
		return nil, false, fmt.Errorf("debeziumavro: output %s: %w", o.ID, err)
	}
	return b, true, nil
}

// flatten replaces the nested objects and arrays of a row (or pk array)
// by their JSON text: an output column is a scalar in Avro.
func flatten(v any) {
	set := func(x any) any {
		switch x.(type) {
		case map[string]any, []any:
			b, _ := json.Marshal(x)
			return string(b)
		}
		return x
	}
	switch r := v.(type) {
	case map[string]any:
		for k, x := range r {
			r[k] = set(x)
		}
	case []any:
		for i, x := range r {
			r[i] = set(x)
		}
	}
}
