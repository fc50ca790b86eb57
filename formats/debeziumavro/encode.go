package debeziumavro

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hamba/avro/v2"
)

// Column is one column of a table's Debezium Value record.
type Column struct {
	Name string
	// Type is the column's Avro type as JSON: `"long"`, `"string"`,
	// `{"type":"int","connect.name":"io.debezium.time.Date"}`, …
	Type string
	// Optional columns are ["null", Type] with default null (a nullable
	// column, or one added later: schema evolution).
	Optional bool
}

// EnvelopeSchema is the Avro schema Debezium's Postgres connector registers
// (with Confluent's AvroConverter) for the change events of one table whose
// record namespace is ns (topic prefix, schema and table:
// "dbserver1.public.users"): an Envelope record of before and after (both
// ["null", Value]), source (io.debezium.connector.postgresql.Source), op,
// ts_ms and transaction.
func EnvelopeSchema(ns string, cols []Column) string {
	var fs []string
	for _, c := range cols {
		if c.Optional {
			fs = append(fs, fmt.Sprintf(`{"name":%q,"type":["null",%s],"default":null}`, c.Name, c.Type))
		} else {
			fs = append(fs, fmt.Sprintf(`{"name":%q,"type":%s}`, c.Name, c.Type))
		}
	}
	return `{"type":"record","name":"Envelope","namespace":"` + ns + `","fields":[` +
		`{"name":"before","type":["null",{"type":"record","name":"Value","fields":[` + strings.Join(fs, ",") +
		`],"connect.name":"` + ns + `.Value"}],"default":null},` +
		`{"name":"after","type":["null","Value"],"default":null},` +
		`{"name":"source","type":{"type":"record","name":"Source","namespace":"io.debezium.connector.postgresql","fields":[` +
		`{"name":"version","type":"string"},{"name":"connector","type":"string"},{"name":"name","type":"string"},` +
		`{"name":"ts_ms","type":"long"},` +
		`{"name":"snapshot","type":[{"type":"string","connect.version":1,"connect.parameters":{"allowed":"true,last,false,incremental"},"connect.default":"false","connect.name":"io.debezium.data.Enum"},"null"],"default":"false"},` +
		`{"name":"db","type":"string"},{"name":"sequence","type":["null","string"],"default":null},` +
		`{"name":"schema","type":"string"},{"name":"table","type":"string"},` +
		`{"name":"txId","type":["null","long"],"default":null},{"name":"lsn","type":["null","long"],"default":null},` +
		`{"name":"xmin","type":["null","long"],"default":null}],"connect.name":"io.debezium.connector.postgresql.Source"}},` +
		`{"name":"op","type":"string"},{"name":"ts_ms","type":["null","long"],"default":null},` +
		`{"name":"transaction","type":["null",{"type":"record","name":"block","namespace":"event","fields":[` +
		`{"name":"id","type":"string"},{"name":"total_order","type":"long"},{"name":"data_collection_order","type":"long"}],` +
		`"connect.version":1,"connect.name":"event.block"}],"default":null}` +
		`],"connect.version":1,"connect.name":"` + ns + `.Envelope"}`
}

// Encode writes v (JSON values, as Decode returns them: maps, []any,
// json.Number or Go numbers, strings, bools, nil) as Avro with schema,
// framed with the Confluent header and id. A record field absent from v is
// written as its default, or, without one, as its type's zero value (so a
// test's source block need not carry every field Debezium's has). It is the
// inverse of Decode for tests, tools and the Kafka sink.
func Encode(schema avro.Schema, id int, v any) ([]byte, error) {
	return NewEncoder(schema, id).Encode(v)
}

// Encoder encodes values of one schema, framed with its id. It is safe for
// concurrent use.
type Encoder struct {
	schema avro.Schema
	id     int
	// api is this encoder's own: hamba/avro caches encoders by schema
	// fingerprint, and a named type referenced by name ("after":
	// ["null","Value"]) fingerprints by its name, so two versions of one
	// record in a shared cache would use each other's encoders.
	api avro.API
}

// NewEncoder returns an encoder of schema, registered under id.
func NewEncoder(schema avro.Schema, id int) *Encoder {
	return &Encoder{schema: schema, id: id, api: avro.Config{}.Freeze()}
}

// ID is the schema id the encoder frames values with.
func (e *Encoder) ID() int { return e.id }

// Encode encodes v (see the package function Encode).
func (e *Encoder) Encode(v any) ([]byte, error) {
	a, err := toAvro(e.schema, v)
	if err != nil {
		return nil, err
	}
	b, err := e.api.Marshal(e.schema, a)
	if err != nil {
		return nil, err
	}
	out, _ := header.AppendEncode(make([]byte, 0, 5+len(b)), e.id, nil)
	return append(out, b...), nil
}

// encoding is the walk of Encode: JSON values to hamba/avro's generic
// values.
var encoding = walker{
	other:    toAvroOther,
	notArray: "want an array, got %T",
	notMap:   "want an object, got %T",
}

// toAvro converts a JSON-like value into what hamba/avro's generic encoder
// takes for schema (unions as {branch name: value}, ints as int32/int64, …).
func toAvro(schema avro.Schema, v any) (any, error) { return encoding.walk(schema, v) }

// toAvroOther converts a union's, a record's or a primitive's value.
func toAvroOther(w *walker, schema avro.Schema, v any) (any, error) {
	switch s := schema.(type) {
	case *avro.UnionSchema:
		if v == nil {
			for _, t := range s.Types() {
				if t.Type() == avro.Null {
					// A nil map, not a nil interface: hamba/avro's map
					// union encoder writes it as null, while a nil
					// interface for a ["null", record] union panics.
					return map[string]any(nil), nil
				}
			}
			return nil, fmt.Errorf("null for a union without null")
		}
		var first error
		for _, t := range s.Types() {
			if t.Type() == avro.Null {
				continue
			}
			a, err := w.walk(t, v)
			if err == nil {
				return map[string]any{typeName(t): a}, nil
			}
			if first == nil {
				first = err
			}
		}
		return nil, first
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: want an object, got %T", s.FullName(), v)
		}
		out := make(map[string]any, len(s.Fields()))
		if !hasFields(s, m) {
			for k := range m {
				if !slices.ContainsFunc(s.Fields(), func(f *avro.Field) bool { return f.Name() == k }) {
					return nil, fmt.Errorf("%s: field %q is not in the schema", s.FullName(), k)
				}
			}
		}
		for _, f := range s.Fields() {
			x, present := m[f.Name()]
			if !present {
				if f.HasDefault() {
					out[f.Name()] = defaultOf(f)
					continue
				}
				x = zero(f.Type())
			}
			a, err := w.field(s, f, x)
			if err != nil {
				return nil, err
			}
			out[f.Name()] = a
		}
		return out, nil
	}
	return primitiveToAvro(schema, v)
}

// primitiveToAvro converts a primitive's (or logical type's) value.
func primitiveToAvro(schema avro.Schema, v any) (any, error) {
	if l := logical(schema); l != "" && l != avro.UUID {
		return logicalToAvro(schema, l, v)
	}
	switch schema.Type() {
	case avro.Null:
		if v != nil {
			return nil, fmt.Errorf("want null, got %T", v)
		}
		return nil, nil
	case avro.Boolean:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("want a boolean, got %T", v)
		}
		return b, nil
	case avro.String, avro.Enum:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a string, got %T", v)
		}
		return s, nil
	case avro.Bytes:
		switch x := v.(type) {
		case []byte:
			return x, nil
		case string:
			return base64.StdEncoding.DecodeString(x)
		}
		return nil, fmt.Errorf("want bytes, got %T", v)
	case avro.Int, avro.Long:
		var n int64
		switch x := v.(type) {
		case json.Number:
			i, err := strconv.ParseInt(string(x), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("want an integer, got %s", x)
			}
			n = i
		case int:
			n = int64(x)
		case int32:
			n = int64(x)
		case int64:
			n = x
		case float64:
			if x != float64(int64(x)) {
				return nil, fmt.Errorf("want an integer, got %v", x)
			}
			n = int64(x)
		default:
			return nil, fmt.Errorf("want an integer, got %T", v)
		}
		if schema.Type() == avro.Int {
			if n != int64(int32(n)) {
				return nil, fmt.Errorf("%d overflows an Avro int", n)
			}
			return int(n), nil
		}
		return n, nil
	case avro.Float, avro.Double:
		var f float64
		switch x := v.(type) {
		case string: // as Decode writes what JSON cannot hold
			switch x {
			case "NaN":
				f = math.NaN()
			case "Infinity":
				f = math.Inf(1)
			case "-Infinity":
				f = math.Inf(-1)
			default:
				return nil, fmt.Errorf("want a number, got %q", x)
			}
		case json.Number:
			g, err := x.Float64()
			if err != nil {
				return nil, fmt.Errorf("want a number, got %s", x)
			}
			f = g
		case float64:
			f = x
		case float32:
			f = float64(x)
		case int:
			f = float64(x)
		case int64:
			f = float64(x)
		default:
			return nil, fmt.Errorf("want a number, got %T", v)
		}
		if schema.Type() == avro.Float {
			return float32(f), nil
		}
		return f, nil
	}
	return nil, fmt.Errorf("Avro type %s is not supported by Encode", schema.Type())
}

// defaultOf is a field's default in the form the generic encoder takes.
func defaultOf(f *avro.Field) any {
	d := f.Default()
	if u, ok := f.Type().(*avro.UnionSchema); ok {
		if d == nil {
			return map[string]any(nil) // see toAvro's null
		}
		return map[string]any{typeName(u.Types()[0]): d}
	}
	return d
}

// zero is the zero JSON value of a required field's type.
func zero(s avro.Schema) any {
	switch s.Type() {
	case avro.String, avro.Enum:
		return ""
	case avro.Boolean:
		return false
	case avro.Int, avro.Long, avro.Float, avro.Double:
		return json.Number("0")
	case avro.Bytes:
		return []byte{}
	case avro.Record, avro.Map:
		return map[string]any{}
	case avro.Array:
		return []any{}
	}
	return nil
}

// logicalToAvro converts the JSON form Decode gives a logical type (days,
// milliseconds or microseconds; a decimal's text) back to hamba/avro's Go
// type.
func logicalToAvro(schema avro.Schema, l avro.LogicalType, v any) (any, error) {
	if l == avro.Decimal {
		var text string
		switch x := v.(type) {
		case json.Number:
			text = string(x)
		case string:
			text = x
		case float64:
			text = strconv.FormatFloat(x, 'f', -1, 64)
		case int:
			text = strconv.Itoa(x)
		case int64:
			text = strconv.FormatInt(x, 10)
		default:
			return nil, fmt.Errorf("want a decimal, got %T", v)
		}
		r, ok := new(big.Rat).SetString(text)
		if !ok {
			return nil, fmt.Errorf("want a decimal, got %q", text)
		}
		return r, nil
	}
	base := avro.Long
	if schema.Type() == avro.Int {
		base = avro.Int
	}
	nv, err := primitiveToAvro(avro.NewPrimitiveSchema(avro.Long, nil), v)
	if err != nil {
		return nil, err
	}
	n := nv.(int64)
	if base == avro.Int && n != int64(int32(n)) {
		return nil, fmt.Errorf("%d overflows an Avro int", n)
	}
	switch l {
	case avro.Date:
		return time.Unix(n*86400, 0).UTC(), nil
	case avro.TimeMillis:
		return time.Duration(n) * time.Millisecond, nil
	case avro.TimeMicros:
		return time.Duration(n) * time.Microsecond, nil
	case avro.TimestampMillis, avro.LocalTimestampMillis:
		return time.UnixMilli(n).UTC(), nil
	case avro.TimestampMicros, avro.LocalTimestampMicros:
		return time.UnixMicro(n).UTC(), nil
	}
	return nil, fmt.Errorf("logical type %s is not supported by Encode", l)
}

// hasFields reports whether every key of m is a field of s.
func hasFields(s *avro.RecordSchema, m map[string]any) bool {
	n := 0
	for _, f := range s.Fields() {
		if _, ok := m[f.Name()]; ok {
			n++
		}
	}
	return n == len(m)
}
