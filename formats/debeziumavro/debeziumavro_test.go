package debeziumavro_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/formats/debeziumavro"
	"github.com/joinery/joinery/internal/registryfake"
	"github.com/joinery/joinery/record"
)

var (
	usersV1 = debeziumavro.EnvelopeSchema("dbserver1.public.users", []debeziumavro.Column{
		{Name: "id", Type: `"long"`}, {Name: "firstname", Type: `"string"`}, {Name: "lastname", Type: `"string"`, Optional: true},
	})
	// usersV2 adds an optional column (schema evolution: a new schema id).
	usersV2 = debeziumavro.EnvelopeSchema("dbserver1.public.users", []debeziumavro.Column{
		{Name: "id", Type: `"long"`}, {Name: "firstname", Type: `"string"`}, {Name: "lastname", Type: `"string"`, Optional: true},
		{Name: "score", Type: `"double"`, Optional: true},
	})
	// typesV1 has the other Avro types a Debezium Value holds.
	typesV1 = debeziumavro.EnvelopeSchema("dbserver1.public.types", []debeziumavro.Column{
		{Name: "id", Type: `"int"`}, {Name: "ok", Type: `"boolean"`}, {Name: "f", Type: `"float"`},
		{Name: "raw", Type: `"bytes"`}, {Name: "day", Type: `{"type":"int","logicalType":"date"}`},
		{Name: "at", Type: `{"type":"long","logicalType":"timestamp-micros"}`},
		{Name: "price", Type: `{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`},
		{Name: "tags", Type: `{"type":"array","items":"string"}`},
		{Name: "color", Type: `{"type":"enum","name":"Color","symbols":["RED","GREEN"]}`},
	})
)

type fixture struct {
	reg *registryfake.Registry
	dec *debeziumavro.Decoder
	ids map[string]int
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	reg := registryfake.New()
	t.Cleanup(reg.Close)
	f := &fixture{reg: reg, ids: map[string]int{}}
	f.ids["usersV1"] = reg.Register("dbserver1.public.users-value", registryfake.Schema{Schema: usersV1})
	f.ids["usersV2"] = reg.Register("dbserver1.public.users-value", registryfake.Schema{Schema: usersV2})
	f.ids["types"] = reg.Register("dbserver1.public.types-value", registryfake.Schema{Schema: typesV1})
	f.ids["proto"] = reg.Register("other-value", registryfake.Schema{Schema: `syntax = "proto3"; message M {}`, Type: "PROTOBUF"})
	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	f.dec = debeziumavro.NewDecoder(cl)
	return f
}

// enc encodes env with the named schema, framed with its registered id.
func (f *fixture) enc(t *testing.T, schema string, env map[string]any) []byte {
	t.Helper()
	texts := map[string]string{"usersV1": usersV1, "usersV2": usersV2, "types": typesV1}
	s, err := avro.ParseWithCache(texts[schema], "", &avro.SchemaCache{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := debeziumavro.Encode(s, f.ids[schema], env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func src(table string, lsn int) map[string]any {
	return map[string]any{"version": "2.7.0.Final", "connector": "postgresql", "name": "dbserver1", "ts_ms": 1700000000000,
		"db": "app", "schema": "public", "table": table, "lsn": lsn}
}

func user(id int, first string, last any) map[string]any {
	return map[string]any{"id": id, "firstname": first, "lastname": last}
}

// TestDecode: every Avro record decodes to what formats/debezium makes of
// the same event in Debezium JSON; bad records get their reason.
func TestDecode(t *testing.T) {
	f := newFixture(t)
	pos := record.Position{Source: "users", Partition: 2, Offset: 7}
	env := func(op string, before, after any, ts any) map[string]any {
		return map[string]any{"op": op, "before": before, "after": after, "source": src("users", 16), "ts_ms": ts}
	}
	header := func(id int) []byte { return []byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)} }
	good := f.enc(t, "usersV1", env("c", nil, user(1, "Egor", "M"), 1700000000001))
	cases := []struct {
		name   string
		value  []byte
		json   string // the same event in Debezium JSON ("" for a reject)
		reason string // the reject reason; "tombstone", "truncate" for those
	}{
		{name: "create", value: good,
			json: `{"op":"c","before":null,"after":{"id":1,"firstname":"Egor","lastname":"M"},"source":{"table":"users","lsn":16},"ts_ms":1700000000001}`},
		{name: "snapshot read, null column", value: f.enc(t, "usersV1", env("r", nil, user(2, "Anna", nil), 5)),
			json: `{"op":"r","after":{"id":2,"firstname":"Anna","lastname":null},"source":{"table":"users","lsn":16},"ts_ms":5}`},
		{name: "update", value: f.enc(t, "usersV1", env("u", user(1, "Egor", "M"), user(1, "Egor", "Myasnikov"), 6)),
			json: `{"op":"u","before":{"id":1,"firstname":"Egor","lastname":"M"},"after":{"id":1,"firstname":"Egor","lastname":"Myasnikov"},"source":{"table":"users","lsn":16},"ts_ms":6}`},
		{name: "update without before", value: f.enc(t, "usersV1", env("u", nil, user(1, "E", "M"), nil)),
			json: `{"op":"u","after":{"id":1,"firstname":"E","lastname":"M"},"source":{"table":"users","lsn":16}}`},
		{name: "delete", value: f.enc(t, "usersV1", env("d", user(1, "Egor", "M"), nil, 7)),
			json: `{"op":"d","before":{"id":1,"firstname":"Egor","lastname":"M"},"source":{"table":"users","lsn":16},"ts_ms":7}`},
		{name: "evolved schema, added column set", value: f.enc(t, "usersV2", env("c", nil, map[string]any{"id": 3, "firstname": "Mitya", "lastname": "Volk", "score": 1.5}, 8)),
			json: `{"op":"c","after":{"id":3,"firstname":"Mitya","lastname":"Volk","score":1.5},"source":{"table":"users","lsn":16},"ts_ms":8}`},
		{name: "evolved schema, added column null", value: f.enc(t, "usersV2", env("c", nil, user(4, "Pavel", "H"), 9)),
			json: `{"op":"c","after":{"id":4,"firstname":"Pavel","lastname":"H","score":null},"source":{"table":"users","lsn":16},"ts_ms":9}`},
		{name: "other types", value: f.enc(t, "types", map[string]any{"op": "c", "source": src("types", 17), "after": map[string]any{
			"id": 1, "ok": true, "f": 0.5, "raw": "AQI=", "day": 19000, "at": 1700000000000001, "price": "12.34", "tags": []any{"a", "b"}, "color": "GREEN"}}),
			json: `{"op":"c","after":{"id":1,"ok":true,"f":0.5,"raw":"AQI=","day":19000,"at":1700000000000001,"price":12.34,"tags":["a","b"],"color":"GREEN"},"source":{"table":"types","lsn":17}}`},
		{name: "kafka tombstone", value: nil, reason: "tombstone"},
		{name: "truncate", value: f.enc(t, "usersV1", env("t", nil, nil, nil)), reason: "truncate"},
		{name: "unknown op", value: f.enc(t, "usersV1", env("x", nil, user(1, "a", "b"), nil)), reason: debezium.ReasonUnknownOp},
		{name: "create without after", value: f.enc(t, "usersV1", env("c", nil, nil, nil)), reason: debezium.ReasonMissingAfter},
		{name: "delete without before", value: f.enc(t, "usersV1", env("d", nil, nil, nil)), reason: debezium.ReasonMissingBefore},
		{name: "unknown schema id", value: append(header(4242), good[5:]...), reason: debeziumavro.ReasonUnknownSchema},
		{name: "protobuf schema id", value: append(header(f.ids["proto"]), good[5:]...), reason: debeziumavro.ReasonBadSchema},
		{name: "bad magic byte", value: append([]byte{1}, good[1:]...), reason: debeziumavro.ReasonBadHeader},
		{name: "JSON, not the wire format", value: []byte(`{"op":"c","after":{"id":1}}`), reason: debeziumavro.ReasonBadHeader},
		{name: "truncated header", value: good[:3], reason: debeziumavro.ReasonBadHeader},
		{name: "header only", value: good[:5], reason: debeziumavro.ReasonBadAvro},
		{name: "truncated payload", value: good[:len(good)-4], reason: debeziumavro.ReasonBadAvro},
		{name: "trailing bytes", value: append(append([]byte(nil), good...), 0), reason: debeziumavro.ReasonBadAvro},
		{name: "payload of another schema", value: append(header(f.ids["types"]), good[5:]...), reason: debeziumavro.ReasonBadAvro},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := f.dec.Resolve(ctx, tc.value); err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			got, err := f.dec.DecodeEnvelope(ctx, tc.value, pos)
			switch tc.reason {
			case "":
				if err != nil {
					t.Fatalf("DecodeEnvelope: %v", err)
				}
				want, err := debezium.DecodeEnvelope([]byte(tc.json), pos)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("Avro decodes to\n %#v\nJSON to\n %#v", got, want)
				}
				if got.Table == "" || got.SourcePos == "" {
					t.Errorf("table %q, source position %q: want both", got.Table, got.SourcePos)
				}
			case "tombstone":
				if !errors.Is(err, debezium.ErrTombstone) {
					t.Errorf("err = %v, want ErrTombstone", err)
				}
			case "truncate":
				if !errors.Is(err, debezium.ErrTruncate) || got.Table != "users" {
					t.Errorf("err = %v, table %q; want ErrTruncate of users", err, got.Table)
				}
			default:
				var de *debezium.DecodeError
				if !errors.As(err, &de) || de.Reason != tc.reason || de.Pos != pos {
					t.Errorf("err = %v, want a DecodeError %s at %v", err, tc.reason, pos)
				}
			}
		})
	}
}

// TestRegistryCache: a schema is fetched once per id; an unreachable
// registry is a RegistryError (not bad input) until it answers again; an
// unknown id is asked again only after a while.
func TestRegistryCache(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	v1 := f.enc(t, "usersV1", map[string]any{"op": "c", "after": user(1, "a", "b"), "source": src("users", 1)})
	v2 := f.enc(t, "usersV2", map[string]any{"op": "c", "after": user(1, "a", "b"), "source": src("users", 2)})

	f.reg.SetDown(true)
	for _, call := range []func() error{
		func() error { return f.dec.Resolve(ctx, v1) },
		func() error { _, err := f.dec.Decode(ctx, v1, record.Position{}); return err },
	} {
		err := call()
		var re *debeziumavro.RegistryError
		var de *debezium.DecodeError
		if !errors.As(err, &re) || errors.As(err, &de) || re.ID != f.ids["usersV1"] {
			t.Fatalf("registry down: err = %v, want a RegistryError for id %d", err, f.ids["usersV1"])
		}
	}
	f.reg.SetDown(false)
	for range 3 {
		if _, err := f.dec.Decode(ctx, v1, record.Position{}); err != nil {
			t.Fatal(err)
		}
	}
	before := f.reg.IDGets()
	f.reg.SetDown(true) // cached: no request needed
	if _, err := f.dec.Decode(ctx, v1, record.Position{}); err != nil {
		t.Fatalf("cached schema with the registry down: %v", err)
	}
	if got := f.reg.IDGets() - before; got != 0 {
		t.Errorf("%d schema requests for a cached id, want 0", got)
	}
	if err := f.dec.Resolve(ctx, v2); err == nil {
		t.Fatal("a new schema id with the registry down resolved")
	}
	f.reg.SetDown(false)
	if _, err := f.dec.Decode(ctx, v2, record.Position{}); err != nil {
		t.Fatal(err)
	}

	unknown := append([]byte{0, 0, 0, 0x10, 0}, v1[5:]...)
	before = f.reg.IDGets()
	for range 3 {
		var de *debezium.DecodeError
		if _, err := f.dec.Decode(ctx, unknown, record.Position{}); !errors.As(err, &de) || de.Reason != debeziumavro.ReasonUnknownSchema {
			t.Fatalf("unknown id: %v", err)
		}
	}
	if got := f.reg.IDGets() - before; got != 1 {
		t.Errorf("unknown id asked %d times, want once (cached)", got)
	}
}

// TestRegistryAuth: credentials reach the registry; wrong ones are a
// RegistryError (retried), not a reject of the record.
func TestRegistryAuth(t *testing.T) {
	reg := registryfake.New(registryfake.WithAuth("Bearer s3cret"))
	defer reg.Close()
	id := reg.Register("users-value", registryfake.Schema{Schema: usersV1})
	s, _ := avro.Parse(usersV1)
	v, err := debeziumavro.Encode(s, id, map[string]any{"op": "r", "after": user(1, "a", nil), "source": src("users", 1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg debeziumavro.ClientConfig
		ok  bool
	}{
		{debeziumavro.ClientConfig{URLs: []string{reg.URL()}, Token: "s3cret"}, true},
		{debeziumavro.ClientConfig{URLs: []string{reg.URL()}, Token: "wrong"}, false},
		{debeziumavro.ClientConfig{URLs: []string{reg.URL()}, Username: "u", Password: "p"}, false},
	} {
		cl, err := debeziumavro.NewClient(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = debeziumavro.NewDecoder(cl).Resolve(ctx, v)
		cancel()
		var re *debeziumavro.RegistryError
		if tc.ok != (err == nil) || (err != nil && !errors.As(err, &re)) {
			t.Errorf("%+v: Resolve = %v", tc.cfg, err)
		}
	}
}
