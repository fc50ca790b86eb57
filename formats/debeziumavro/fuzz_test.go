package debeziumavro_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/formats/debeziumavro"
	"github.com/joinery/joinery/record"
)

// memRegistry serves fixed schemas without HTTP, for the fuzzer's speed.
type memRegistry map[int]string

func (m memRegistry) SchemaByID(_ context.Context, id int) (sr.Schema, error) {
	s, ok := m[id]
	if !ok {
		return sr.Schema{}, &sr.ResponseError{StatusCode: 404, ErrorCode: 40403, Message: fmt.Sprintf("schema %d not found", id)}
	}
	return sr.Schema{Schema: s, Type: sr.TypeAvro}, nil
}

func FuzzDecode(f *testing.F) {
	reg := memRegistry{1: usersV1, 2: usersV2, 3: typesV1, 4: `{"type":"string"}`, 5: `not a schema`, 6: textsV1}
	schemas := map[int]avro.Schema{}
	for id, text := range reg {
		if s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{}); err == nil {
			schemas[id] = s
		}
	}
	seed := func(id int, env map[string]any) {
		b, err := debeziumavro.Encode(schemas[id], id, env)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	seed(1, map[string]any{"op": "c", "after": user(1, "Egor", "M"), "source": src("users", 3), "ts_ms": 5})
	seed(1, map[string]any{"op": "u", "before": user(1, "Egor", nil), "after": user(1, "Egor", "M"), "source": src("users", 4)})
	seed(1, map[string]any{"op": "d", "before": user(1, "Egor", "M"), "source": src("users", 5)})
	seed(1, map[string]any{"op": "t", "source": src("users", 6)})
	seed(2, map[string]any{"op": "r", "after": map[string]any{"id": 2, "firstname": "A", "score": -0.25}, "source": src("users", 7)})
	seed(3, map[string]any{"op": "c", "source": src("types", 8), "after": map[string]any{
		"id": 1, "ok": true, "f": "NaN", "raw": "AQI=", "day": -3, "at": 17, "price": "-0.05", "tags": []any{"x"}, "color": "RED"}})
	texts := func(id, name, key string) map[string]any {
		return map[string]any{"id": id, "name": name, "tags": []any{name}, "attrs": map[string]any{key: name}}
	}
	seed(6, map[string]any{"op": "c", "source": src("texts", 9), "after": texts("1", "Égor 🙂", "k")})
	seed(6, map[string]any{"op": "c", "source": src("texts", 10), "after": texts("1", "k\xff", "k")})
	seed(6, map[string]any{"op": "c", "source": src("texts", 11), "after": texts("2", "n", "\xed\xa0\x80")})
	if b, err := debeziumavro.Encode(schemas[4], 4, "not a record"); err == nil {
		f.Add(b)
	} else {
		f.Fatal(err)
	}
	for _, s := range [][]byte{nil, {0}, {0, 0, 0, 0, 5, 1}, {1, 0, 0, 0, 1}, {0, 0, 0, 0, 9, 0}} {
		f.Add(s)
	}
	dec := debeziumavro.NewDecoder(reg)
	pos := record.Position{Source: "s", Partition: 1, Offset: 2}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := dec.Resolve(ctx, b); err != nil {
			t.Fatalf("Resolve with a reachable registry: %v", err)
		}
		e, err := dec.DecodeEnvelope(ctx, b, pos)
		c, cerr := dec.Decode(ctx, b, pos)
		if (err == nil) != (cerr == nil) || !reflect.DeepEqual(c, e.Change) {
			t.Fatalf("Decode = %v, %v; DecodeEnvelope = %v, %v", c, cerr, e, err)
		}
		if err != nil {
			var de *debezium.DecodeError
			if !errors.Is(err, debezium.ErrTombstone) && !errors.Is(err, debezium.ErrTruncate) && !errors.As(err, &de) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// No text that is not UTF-8 gets through (it is bad-utf8).
		if err := validText(map[string]any(c.Before)); err != nil {
			t.Fatalf("before: %v", err)
		}
		if err := validText(map[string]any(c.After)); err != nil {
			t.Fatalf("after: %v", err)
		}
		// What decodes encodes back (with the same schema) to the same change.
		id := int(b[1])<<24 | int(b[2])<<16 | int(b[3])<<8 | int(b[4])
		env := map[string]any{"op": c.Op.String(), "before": map[string]any(c.Before), "after": map[string]any(c.After),
			"ts_ms": c.TsMs, "source": map[string]any{"table": e.Table}}
		if c.Before == nil {
			env["before"] = nil
		}
		if c.After == nil {
			env["after"] = nil
		}
		out, err := debeziumavro.Encode(schemas[id], id, env)
		if err != nil {
			t.Fatalf("re-encode %#v: %v", env, err)
		}
		c2, err := dec.Decode(ctx, out, pos)
		if err != nil {
			t.Fatalf("decode of re-encoded: %v", err)
		}
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("round trip differs:\n %#v\n %#v", c, c2)
		}
	})
}

// validText returns an error for the first string or map key in v that is
// not UTF-8.
func validText(v any) error {
	switch x := v.(type) {
	case string:
		if !utf8.ValidString(x) {
			return fmt.Errorf("%q is not UTF-8", x)
		}
	case map[string]any:
		for k, y := range x {
			if err := validText(k); err != nil {
				return err
			}
			if err := validText(y); err != nil {
				return err
			}
		}
	case []any:
		for _, y := range x {
			if err := validText(y); err != nil {
				return err
			}
		}
	}
	return nil
}

// BenchmarkDecodeEnvelope: one users change, Avro with a cached schema
// against the same change in Debezium JSON.
func BenchmarkDecodeEnvelope(b *testing.B) {
	s, err := avro.ParseWithCache(usersV1, "", &avro.SchemaCache{})
	if err != nil {
		b.Fatal(err)
	}
	env := map[string]any{"op": "u", "before": user(1, "Egor", "M"), "after": user(1, "Egor", "Myasnikov"), "source": src("users", 16), "ts_ms": 5}
	value, err := debeziumavro.Encode(s, 1, env)
	if err != nil {
		b.Fatal(err)
	}
	line := []byte(`{"op":"u","before":{"id":1,"firstname":"Egor","lastname":"M"},"after":{"id":1,"firstname":"Egor","lastname":"Myasnikov"},` +
		`"source":{"version":"2.7.0.Final","connector":"postgresql","name":"dbserver1","ts_ms":1700000000000,"snapshot":"false","db":"app","sequence":null,"schema":"public","table":"users","txId":null,"lsn":16,"xmin":null},"ts_ms":5,"transaction":null}`)
	dec := debeziumavro.NewDecoder(memRegistry{1: usersV1})
	ctx := context.Background()
	b.Run("avro", func(b *testing.B) {
		b.SetBytes(int64(len(value)))
		for b.Loop() {
			if _, err := dec.DecodeEnvelope(ctx, value, record.Position{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			if _, err := debezium.DecodeEnvelope(line, record.Position{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
