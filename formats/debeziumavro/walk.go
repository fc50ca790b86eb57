package debeziumavro

import (
	"fmt"

	"github.com/hamba/avro/v2"
)

// walker is one direction of the codec's walk over an Avro schema and a
// value: decoding's (normalize: hamba/avro's generic values to the JSON
// values formats/debezium works with) or encoding's (toAvro: the reverse).
// walk does what both do alike: it follows references, maps an array's
// and a map's items one by one, and names the field of a record whose
// value fails. Unions, record fields and primitives are other's.
type walker struct {
	// other maps a value of any other schema (a union, a record or a
	// primitive), walking its parts with w.
	other func(w *walker, schema avro.Schema, v any) (any, error)
	// nilIsNull makes nil null whatever the schema (hamba/avro decodes
	// every null, a union's included, to nil).
	nilIsNull bool
	// notArray and notMap are the errors of a value of an array or map
	// schema that is not a []any or map[string]any: formats of its %T.
	notArray, notMap string
	// key, when set, checks each map key.
	key func(string) error
}

// walk maps v, a value of schema, to the other side.
func (w *walker) walk(schema avro.Schema, v any) (any, error) {
	if v == nil && w.nilIsNull {
		return nil, nil
	}
	switch s := schema.(type) {
	case *avro.RefSchema:
		return w.walk(s.Schema(), v)
	case *avro.ArraySchema:
		a, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf(w.notArray, v)
		}
		out := make([]any, len(a))
		for i, x := range a {
			y, err := w.walk(s.Items(), x)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf(w.notMap, v)
		}
		out := make(map[string]any, len(m))
		for k, x := range m {
			if w.key != nil {
				if err := w.key(k); err != nil {
					return nil, err
				}
			}
			y, err := w.walk(s.Values(), x)
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		return out, nil
	}
	return w.other(w, schema, v)
}

// field walks x, the value of record s's field f, naming the field in an
// error.
func (w *walker) field(s *avro.RecordSchema, f *avro.Field, x any) (any, error) {
	y, err := w.walk(f.Type(), x)
	if err != nil {
		return nil, fmt.Errorf("%s.%s: %w", s.Name(), f.Name(), err)
	}
	return y, nil
}
