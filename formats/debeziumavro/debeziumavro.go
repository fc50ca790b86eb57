package debeziumavro

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/deadletter/reason"
)

// Reason codes of the Avro-specific rejects (the envelope's are
// formats/debezium's; both from sinks/deadletter/reason). Stable:
// callers use them as metric labels.
const (
	// ReasonBadHeader: the value is shorter than the 5-byte header or its
	// first byte is not the magic 0.
	ReasonBadHeader = string(reason.BadHeader)
	// ReasonUnknownSchema: the registry does not know the header's schema id.
	ReasonUnknownSchema = string(reason.UnknownSchema)
	// ReasonBadSchema: the id's schema is not Avro, or does not parse.
	ReasonBadSchema = string(reason.BadSchema)
	// ReasonBadAvro: the payload does not decode with the writer schema
	// (truncated, corrupt, trailing bytes), or is not a record.
	ReasonBadAvro = string(reason.BadAvro)
)

// Registry fetches schemas by id; *sr.Client is one.
type Registry interface {
	SchemaByID(ctx context.Context, id int) (sr.Schema, error)
}

// RegistryError is a schema fetch that failed for a reason other than the
// registry not knowing the id: unreachable, timing out, 5xx, refusing our
// credentials. It is not the record's fault; callers retry (the node
// stalls the source, as for any transient error).
type RegistryError struct {
	ID  int
	Err error
}

func (e *RegistryError) Error() string {
	return fmt.Sprintf("debeziumavro: schema registry: fetching schema id %d: %v", e.ID, e.Err)
}

func (e *RegistryError) Unwrap() error { return e.Err }

// unknownTTL is how long an id the registry answered "not found" for stays
// cached as unknown before it is asked again.
const unknownTTL = 30 * time.Second

type entry struct {
	schema avro.Schema
	// api is the schema's own hamba/avro configuration: hamba caches
	// decoders by schema fingerprint, and a named type referenced by name
	// ("after": ["null","Value"]) fingerprints by its name, so two versions
	// of one record (schema evolution) in one cache would share decoders.
	api   avro.API
	err   error     // permanent reject (unknown-schema, bad-schema)
	until time.Time // for unknown-schema: ask again after this
}

// Decoder decodes Confluent-framed Debezium Avro values. It is safe for
// concurrent use; schemas are cached by id for its lifetime.
type Decoder struct {
	reg Registry

	maxBytes int

	mu    sync.Mutex
	cache map[int]*entry
	now   func() time.Time
}

// Option configures a Decoder.
type Option func(*Decoder)

// MaxBytes bounds one Avro bytes or string value, and so what a corrupt
// length prefix can make the decoder allocate (default 1 MiB; the node
// passes the source's max_record_bytes: no value is longer than its record).
func MaxBytes(n int) Option { return func(d *Decoder) { d.maxBytes = n } }

// NewDecoder returns a decoder fetching schemas from reg.
func NewDecoder(reg Registry, opts ...Option) *Decoder {
	d := &Decoder{
		reg:      reg,
		maxBytes: 1 << 20,
		cache:    map[int]*entry{},
		now:      time.Now,
	}
	for _, o := range opts {
		o(d)
	}
	return d
}

var header sr.ConfluentHeader

// schemaID returns the header's schema id and the payload after it.
func schemaID(b []byte, pos record.Position) (int, []byte, error) {
	id, rest, err := header.DecodeID(b)
	if err != nil {
		what := "no 5-byte header"
		if len(b) >= 5 {
			what = fmt.Sprintf("magic byte %d, want 0", b[0])
		}
		return 0, nil, &debezium.DecodeError{Reason: ReasonBadHeader, Msg: "not the Confluent wire format: " + what, Pos: pos}
	}
	return id, rest, nil
}

// Resolve makes sure the schema of value's id is cached, fetching it if
// needed. It returns an error only when the registry could not answer (a
// *RegistryError): bad headers, unknown ids and bad schemas are left for
// Decode to reject. Callers retry Resolve before decoding a batch, so a
// registry outage stalls the input instead of dead-lettering it.
func (d *Decoder) Resolve(ctx context.Context, value []byte) error {
	if len(value) == 0 {
		return nil
	}
	id, _, err := schemaID(value, record.Position{})
	if err != nil {
		return nil
	}
	_, err = d.schema(ctx, id, record.Position{})
	var re *RegistryError
	if errors.As(err, &re) {
		return err
	}
	return nil
}

// schema returns the cached or fetched schema of id.
func (d *Decoder) schema(ctx context.Context, id int, pos record.Position) (*entry, error) {
	d.mu.Lock()
	e, ok := d.cache[id]
	d.mu.Unlock()
	if ok && (e.until.IsZero() || d.now().Before(e.until)) {
		if e.err != nil {
			return nil, withPos(e.err, pos)
		}
		return e, nil
	}
	s, err := d.reg.SchemaByID(ctx, id)
	e = &entry{}
	var re *sr.ResponseError
	switch {
	case errors.As(err, &re) && re.StatusCode == http.StatusNotFound:
		e.err = &debezium.DecodeError{Reason: ReasonUnknownSchema, Msg: fmt.Sprintf("schema id %d is not in the registry: %v", id, re)}
		e.until = d.now().Add(unknownTTL)
	case err != nil:
		return nil, &RegistryError{ID: id, Err: err}
	case s.Type != sr.TypeAvro:
		e.err = &debezium.DecodeError{Reason: ReasonBadSchema, Msg: fmt.Sprintf("schema id %d is %s, not Avro", id, s.Type)}
	default:
		// A fresh name cache per schema: two versions of one record name
		// (an added column) must not see each other's definition.
		parsed, perr := avro.ParseWithCache(s.Schema, "", &avro.SchemaCache{})
		if perr != nil {
			e.err = &debezium.DecodeError{Reason: ReasonBadSchema, Msg: fmt.Sprintf("schema id %d: %v", id, perr)}
		} else {
			// The limits bound one bytes/string value and one array or map.
			e.schema = parsed
			e.api = avro.Config{MaxByteSliceSize: d.maxBytes, MaxSliceAllocSize: d.maxBytes}.Freeze()
		}
	}
	d.mu.Lock()
	d.cache[id] = e
	d.mu.Unlock()
	if e.err != nil {
		return nil, withPos(e.err, pos)
	}
	return e, nil
}

// withPos copies a cached reject with the record's position.
func withPos(err error, pos record.Position) error {
	var de *debezium.DecodeError
	if errors.As(err, &de) {
		c := *de
		c.Pos = pos
		return &c
	}
	return err
}

// Decode is DecodeEnvelope's change.
func (d *Decoder) Decode(ctx context.Context, value []byte, pos record.Position) (record.Change, error) {
	e, err := d.DecodeEnvelope(ctx, value, pos)
	return e.Change, err
}

// DecodeEnvelope decodes one Confluent-framed Avro Debezium envelope.
// An empty value (a Kafka tombstone) is debezium.ErrTombstone, as is a
// payload that decodes to null; a truncate is debezium.ErrTruncate; a bad
// record is a *debezium.DecodeError (the Reason… constants of this package
// or formats/debezium's); a registry that could not be asked is a
// *RegistryError (call Resolve first to retry those apart from decoding).
//
// Values map to what Debezium's JSON converter writes, so the join sees
// the same rows: int and long as json.Number; float and double as
// json.Number (NaN and ±Inf, which JSON cannot hold, as the strings "NaN",
// "Infinity", "-Infinity"); bytes and fixed as base64 strings; enum as
// its symbol; unions as their branch's value; date as days, time-millis
// and timestamp-millis as milliseconds, time-micros and timestamp-micros
// as microseconds since the epoch (json.Number); decimal as its exact
// decimal text (json.Number; the JSON converter writes base64 bytes
// unless decimal.handling.mode is string or double).
func (d *Decoder) DecodeEnvelope(ctx context.Context, value []byte, pos record.Position) (debezium.Envelope, error) {
	if len(value) == 0 {
		return debezium.Envelope{}, debezium.ErrTombstone
	}
	id, payload, err := schemaID(value, pos)
	if err != nil {
		return debezium.Envelope{}, err
	}
	e, err := d.schema(ctx, id, pos)
	if err != nil {
		return debezium.Envelope{}, err
	}
	schema := e.schema
	v, err := e.read(payload)
	if err != nil {
		return debezium.Envelope{}, &debezium.DecodeError{Reason: readReason(err), Msg: fmt.Sprintf("schema id %d: %v", id, err), Pos: pos}
	}
	if v == nil {
		return debezium.Envelope{}, debezium.ErrTombstone
	}
	env, ok := v.(map[string]any)
	if !ok {
		return debezium.Envelope{}, &debezium.DecodeError{Reason: debezium.ReasonNotObject, Msg: fmt.Sprintf("schema id %d is a %s, not a record", id, schema.Type()), Pos: pos}
	}
	return debezium.DecodeMap(env, pos)
}

// DecodeValue decodes any Confluent-framed Avro value (an output of
// OutputEncoder, say) into the JSON values DecodeEnvelope maps Avro to.
// Errors are as DecodeEnvelope's; an empty value is debezium.ErrTombstone.
func (d *Decoder) DecodeValue(ctx context.Context, value []byte) (any, error) {
	if len(value) == 0 {
		return nil, debezium.ErrTombstone
	}
	id, payload, err := schemaID(value, record.Position{})
	if err != nil {
		return nil, err
	}
	e, err := d.schema(ctx, id, record.Position{})
	if err != nil {
		return nil, err
	}
	v, err := e.read(payload)
	if err != nil {
		return nil, &debezium.DecodeError{Reason: readReason(err), Msg: fmt.Sprintf("schema id %d: %v", id, err)}
	}
	return v, nil
}

// badUTF8Error is a string or a map key of an Avro payload that is not
// UTF-8 (a lone surrogate's encoding included). Decoded, Go would turn its
// bad bytes into U+FFFD when the row meets JSON, and two distinct keys
// into one, as internal/utf8json explains for JSON input: refused as
// bad-utf8 (debezium.ReasonBadUTF8), as the JSON decoders do.
type badUTF8Error struct {
	what string // "string" or "map key"
	at   int    // the offset of the first bad byte in it
}

func (e *badUTF8Error) Error() string {
	return fmt.Sprintf("%s is not valid UTF-8 (byte %d); decoded, it would hold U+FFFD", e.what, e.at)
}

// checkUTF8 returns a *badUTF8Error when s is not valid UTF-8.
func checkUTF8(what, s string) error {
	if utf8.ValidString(s) {
		return nil
	}
	at := 0
	for at < len(s) {
		r, n := utf8.DecodeRuneInString(s[at:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		at += n
	}
	return &badUTF8Error{what: what, at: at}
}

// readReason is the reject reason of a payload read failed with err:
// bad-utf8 for a string that is not UTF-8, else bad-avro.
func readReason(err error) string {
	var bu *badUTF8Error
	if errors.As(err, &bu) {
		return debezium.ReasonBadUTF8
	}
	return ReasonBadAvro
}

// read decodes payload with the writer schema into JSON-like values.
func (e *entry) read(payload []byte) (any, error) {
	r := avro.NewReader(nil, 0, avro.WithReaderConfig(e.api)).Reset(payload)
	var raw any
	r.ReadVal(e.schema, &raw)
	if r.Error != nil {
		return nil, r.Error
	}
	if r.Peek(); r.Error == nil {
		return nil, errors.New("trailing bytes after the Avro value")
	}
	return normalize(e.schema, raw)
}
