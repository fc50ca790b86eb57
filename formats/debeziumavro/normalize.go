package debeziumavro

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"time"

	"github.com/hamba/avro/v2"
)

// decoding is the walk of Decode: hamba/avro's generic values to JSON
// values.
var decoding = walker{
	other:     normalizeOther,
	nilIsNull: true,
	notArray:  "array value %T",
	notMap:    "map value %T",
	key:       func(k string) error { return checkUTF8("map key", k) },
}

// normalize maps a value hamba/avro's generic decoding produced for schema
// to the JSON values formats/debezium works with.
func normalize(schema avro.Schema, v any) (any, error) { return decoding.walk(schema, v) }

// normalizeOther maps a union's, a record's or a primitive's value.
func normalizeOther(w *walker, schema avro.Schema, v any) (any, error) {
	switch s := schema.(type) {
	case *avro.UnionSchema:
		// hamba/avro gives a union {branch name: value}, or, for a
		// nullable union of a primitive, the value itself.
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			for name, inner := range m {
				for _, t := range s.Types() {
					if typeName(t) == name {
						return w.walk(t, inner)
					}
				}
			}
		}
		var bu *badUTF8Error
		for _, t := range s.Types() {
			if t.Type() == avro.Null {
				continue
			}
			x, err := w.walk(t, v)
			if err == nil {
				return x, nil
			}
			if errors.As(err, &bu) {
				return nil, err // the branch fits; its value is bad
			}
		}
		return nil, fmt.Errorf("union value %T fits no branch", v)
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("record value %T", v)
		}
		out := make(map[string]any, len(m))
		for _, f := range s.Fields() {
			x, err := w.field(s, f, m[f.Name()])
			if err != nil {
				return nil, err
			}
			out[f.Name()] = x
		}
		return out, nil
	}
	return scalar(schema, v)
}

// typeName is the key hamba/avro gives a union branch: a named type's full
// name, else the type with its logical type ("long.timestamp-millis").
func typeName(s avro.Schema) string {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	name := string(s.Type())
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		name += "." + string(l.Logical().Type())
	}
	return name
}

func logical(s avro.Schema) avro.LogicalType {
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		return l.Logical().Type()
	}
	return ""
}

func num(n int64) json.Number { return json.Number(strconv.FormatInt(n, 10)) }

func float(f float64, bits int) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, bits))
}

// scalar maps a primitive (or logical) value.
func scalar(schema avro.Schema, v any) (any, error) {
	switch x := v.(type) {
	case string:
		if err := checkUTF8("string", x); err != nil {
			return nil, err
		}
		return x, nil
	case bool:
		return x, nil
	case int:
		return num(int64(x)), nil
	case int32:
		return num(int64(x)), nil
	case int64:
		return num(x), nil
	case float32:
		return float(float64(x), 32), nil
	case float64:
		return float(x, 64), nil
	case []byte:
		return base64.StdEncoding.EncodeToString(x), nil
	case *big.Rat:
		scale := 0
		if d, ok := decimalOf(schema); ok {
			scale = d.Scale()
		}
		return json.Number(x.FloatString(scale)), nil
	case time.Time:
		switch logical(schema) {
		case avro.Date:
			return num(x.Unix() / 86400), nil
		case avro.TimestampMicros, avro.LocalTimestampMicros:
			return num(x.UnixMicro()), nil
		}
		return num(x.UnixMilli()), nil
	case time.Duration:
		if logical(schema) == avro.TimeMicros {
			return num(x.Microseconds()), nil
		}
		return num(x.Milliseconds()), nil
	case avro.LogicalDuration:
		return map[string]any{"months": num(int64(x.Months)), "days": num(int64(x.Days)), "milliseconds": num(int64(x.Milliseconds))}, nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Array && rv.Type().Elem().Kind() == reflect.Uint8 {
		b := make([]byte, rv.Len())
		reflect.Copy(reflect.ValueOf(b), rv)
		return base64.StdEncoding.EncodeToString(b), nil
	}
	return nil, fmt.Errorf("unexpected %s value %T", schema.Type(), v)
}

func decimalOf(s avro.Schema) (*avro.DecimalLogicalSchema, bool) {
	if l, ok := s.(avro.LogicalTypeSchema); ok {
		d, ok := l.Logical().(*avro.DecimalLogicalSchema)
		return d, ok
	}
	return nil, false
}
