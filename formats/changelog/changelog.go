package changelog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/internal/utf8json"
	"github.com/joinery/joinery/record"
)

// Format selects an output encoding. The zero value is Changelog.
type Format int

const (
	// Changelog writes every output as
	// {"id":…,"op":"+I"|"-U"|"+U"|"-D","pk":[…],"row":{…}}.
	Changelog Format = iota
	// Upsert writes +I and +U as {"id":…,"key":[…],"value":{…}}, -D as
	// {"id":…,"key":[…],"value":null} and skips -U.
	Upsert
	// Debezium writes Debezium-style envelopes, so another Joinery (or any
	// Debezium consumer) can read the result as a change stream: +I as
	// {"op":"c","before":null,"after":{row}}, +U as {"op":"u","before":null,
	// "after":{row}} (a partial before, as Postgres without REPLICA IDENTITY
	// FULL), -D as {"op":"d","before":{row},"after":null}; -U is skipped. The
	// envelope's "source" holds {"connector":"joinery","id":…,"pk":[…]}.
	Debezium
)

// Valid reports whether f is a known format.
func (f Format) Valid() bool { return f >= Changelog && f <= Debezium }

// ParseFormat parses "changelog" or "upsert" (the inverse of String).
func ParseFormat(s string) (Format, error) {
	switch s {
	case "changelog":
		return Changelog, nil
	case "upsert":
		return Upsert, nil
	case "debezium":
		return Debezium, nil
	}
	return 0, fmt.Errorf("changelog: unknown format %q (want changelog, upsert or debezium)", s)
}

// String returns "changelog", "upsert" or "Format(n)".
func (f Format) String() string {
	switch f {
	case Changelog:
		return "changelog"
	case Upsert:
		return "upsert"
	case Debezium:
		return "debezium"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

type changelogLine struct {
	ID  string          `json:"id"`
	Op  record.Kind     `json:"op"`
	PK  json.RawMessage `json:"pk"`
	Row record.Row      `json:"row"`
	Ts  int64           `json:"ts,omitempty"`  // event time (event-time joins)
	Seq uint64          `json:"seq,omitempty"` // the key's output sequence: order a row's changes by it
}

type debeziumLine struct {
	Before record.Row     `json:"before"`
	After  record.Row     `json:"after"`
	Op     string         `json:"op"`
	Source debeziumSource `json:"source"`
}

type debeziumSource struct {
	Connector string          `json:"connector"`
	ID        string          `json:"id"`
	PK        json.RawMessage `json:"pk"`
	Seq       uint64          `json:"seq,omitempty"`
	TsMs      int64           `json:"ts_ms,omitempty"`
}

// DebeziumConnector is the source.connector of envelopes Debezium.Marshal writes.
const DebeziumConnector = "joinery"

type upsertLine struct {
	ID    string          `json:"id"`
	Key   json.RawMessage `json:"key"`
	Value record.Row      `json:"value"`
	Seq   uint64          `json:"seq,omitempty"`
}

// Append is Marshal appending the line to dst (dst unchanged when ok is
// false or err is set): a sink encodes a batch into one buffer. A
// changelog line whose pk is compact JSON (the join's) is encoded with no
// allocation beyond dst's growth.
func (f Format) Append(dst []byte, o record.Output) (line []byte, ok bool, err error) {
	if f == Changelog && o.Kind >= record.Insert && o.Kind <= record.Delete && compactText(o.PK) && json.Valid([]byte(o.PK)) {
		if line, ok := jsonenc.AppendOutputRawPK(dst, &o); ok {
			return line, true, nil
		}
	}
	b, ok, err := f.Marshal(o)
	if err != nil || !ok {
		return dst, ok, err
	}
	return append(dst, b...), true, nil
}

// compactText reports whether s is not empty and has none of JSON's
// insignificant space (so compact would return it as it is).
func compactText(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ' ' || c == '\n' || c == '\t' || c == '\r' {
			return false
		}
	}
	return true
}

// Marshal encodes o as one line (no trailing newline) in format f. ok is
// false, with a nil error, when the format drops o (-U in Upsert).
//
// o.PK is embedded as raw JSON: it must be valid JSON text (the join writes a
// JSON array) or empty, which is written as null. Marshal fails for an
// invalid PK, a row value encoding/json cannot encode, an unknown Kind or an
// unknown Format. The result is a fresh slice owned by the caller.
func (f Format) Marshal(o record.Output) (line []byte, ok bool, err error) {
	pk := json.RawMessage(o.PK)
	if len(o.PK) == 0 {
		pk = json.RawMessage("null")
	} else if !json.Valid(pk) {
		return nil, false, fmt.Errorf("changelog: output %s: pk is not valid JSON", o.ID)
	}
	if o.Kind < record.Insert || o.Kind > record.Delete {
		return nil, false, fmt.Errorf("changelog: output %s: unknown kind %v", o.ID, o.Kind)
	}
	var v any
	switch f {
	case Changelog:
		if line, ok := appendChangelog(make([]byte, 0, 256), o, pk); ok {
			return line, true, nil
		}
		v = changelogLine{ID: o.ID, Op: o.Kind, PK: pk, Row: o.Row, Ts: o.Ts, Seq: o.Seq}
	case Upsert:
		switch o.Kind {
		case record.UpdateBefore:
			return nil, false, nil
		case record.Delete:
			v = upsertLine{ID: o.ID, Key: pk, Seq: o.Seq}
		default:
			v = upsertLine{ID: o.ID, Key: pk, Value: o.Row, Seq: o.Seq}
			if o.Row == nil {
				// A nil row would read back as a tombstone.
				v = upsertLine{ID: o.ID, Key: pk, Value: record.Row{}, Seq: o.Seq}
			}
		}
	case Debezium:
		src := debeziumSource{Connector: DebeziumConnector, ID: o.ID, PK: pk, Seq: o.Seq, TsMs: o.Ts}
		row := o.Row
		if row == nil {
			row = record.Row{} // a null row would not decode as a change
		}
		switch o.Kind {
		case record.UpdateBefore:
			return nil, false, nil
		case record.Insert:
			v = debeziumLine{After: row, Op: "c", Source: src}
		case record.UpdateAfter:
			v = debeziumLine{After: row, Op: "u", Source: src}
		case record.Delete:
			v = debeziumLine{Before: row, Op: "d", Source: src}
		}
	default:
		return nil, false, fmt.Errorf("changelog: unknown format %v", f)
	}
	b, err := jsonenc.Marshal(v)
	if err != nil {
		return nil, false, fmt.Errorf("changelog: output %s: %w", o.ID, err)
	}
	return b, true, nil
}

// Encode is Marshal for outputs known to be encodable (a valid PK, rows made
// of decoded JSON values and a known Kind): it panics where Marshal would
// fail. Sinks use Marshal.
func (f Format) Encode(o record.Output) (line []byte, ok bool) {
	line, ok, err := f.Marshal(o)
	if err != nil {
		panic(err)
	}
	return line, ok
}

// DecodeChangelog decodes one line written by Changelog.Marshal back into an
// Output: numbers in Row are json.Number, PK is the compacted JSON text of
// "pk" ("" when pk is null or absent, the inverse of Marshal). "id" and "op"
// are required; unknown fields are ignored; trailing data
// after the object is an error, and so is a line that is not UTF-8 or
// escapes an unpaired surrogate (an *utf8json.Error, wrapped: decoded, it
// would hold U+FFFD and merge distinct keys).
func DecodeChangelog(line []byte) (record.Output, error) {
	if err := utf8json.Check(line); err != nil {
		return record.Output{}, fmt.Errorf("changelog: decode: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var l struct {
		ID  *string         `json:"id"`
		Op  *record.Kind    `json:"op"`
		PK  json.RawMessage `json:"pk"`
		Row record.Row      `json:"row"`
		Ts  int64           `json:"ts"`
		Seq uint64          `json:"seq"`
	}
	if err := dec.Decode(&l); err != nil {
		return record.Output{}, fmt.Errorf("changelog: decode: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return record.Output{}, fmt.Errorf("changelog: decode: trailing data after the JSON object")
	}
	if l.ID == nil || l.Op == nil {
		return record.Output{}, fmt.Errorf("changelog: decode: missing id or op")
	}
	o := record.Output{ID: *l.ID, Kind: *l.Op, Row: l.Row, Ts: l.Ts, Seq: l.Seq}
	if len(l.PK) > 0 && string(l.PK) != "null" {
		var buf bytes.Buffer
		if err := json.Compact(&buf, l.PK); err != nil {
			return record.Output{}, fmt.Errorf("changelog: decode pk: %w", err)
		}
		o.PK = buf.String()
	}
	return o, nil
}

// DecodeUpsert decodes one line written by Upsert.Marshal. It returns the
// output id, the compacted key JSON text and the value row, nil for a
// tombstone. It refuses what DecodeChangelog refuses as not UTF-8.
func DecodeUpsert(line []byte) (id, key string, value record.Row, err error) {
	if err := utf8json.Check(line); err != nil {
		return "", "", nil, fmt.Errorf("changelog: decode: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var l struct {
		ID    *string         `json:"id"`
		Key   json.RawMessage `json:"key"`
		Value record.Row      `json:"value"`
	}
	if err := dec.Decode(&l); err != nil {
		return "", "", nil, fmt.Errorf("changelog: decode: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", "", nil, fmt.Errorf("changelog: decode: trailing data after the JSON object")
	}
	if l.ID == nil {
		return "", "", nil, fmt.Errorf("changelog: decode: missing id")
	}
	if len(l.Key) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, l.Key); err != nil {
			return "", "", nil, fmt.Errorf("changelog: decode key: %w", err)
		}
		key = buf.String()
	}
	return *l.ID, key, l.Value, nil
}
