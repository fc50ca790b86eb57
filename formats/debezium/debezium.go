package debezium

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/deadletter/reason"
)

// ErrTombstone is returned by Decode for a tombstone: an empty (or
// whitespace-only) value, the JSON literal null, or a wrapped envelope whose
// payload is null. Kafka-style log compaction uses tombstones; they carry no
// change, so callers count and skip them.
var ErrTombstone = errors.New("debezium: tombstone")

// ErrTruncate is returned for a truncate event (op "t"): the whole table was
// emptied. It carries no row; callers apply their truncate policy.
var ErrTruncate = errors.New("debezium: truncate")

// Reason codes of DecodeError, from the one list of reject reasons
// (sinks/deadletter/reason). They are stable: callers use them as metric
// labels.
const (
	// ReasonNotJSON: the value is not a single well-formed JSON value
	// (including trailing data after the value).
	ReasonNotJSON = string(reason.NotJSON)
	// ReasonNotObject: the value (or the wrapped payload) is not a JSON object.
	ReasonNotObject = string(reason.NotObject)
	// ReasonMissingOp: the envelope has no "op" field (or it is null).
	ReasonMissingOp = string(reason.MissingOp)
	// ReasonUnknownOp: "op" is not one of the strings "c", "r", "u", "d"
	// ("t", truncate, is ErrTruncate).
	ReasonUnknownOp = string(reason.UnknownOp)
	// ReasonMissingAfter: a c, r or u event has a null or absent "after".
	ReasonMissingAfter = string(reason.MissingAfter)
	// ReasonMissingBefore: a d event has a null or absent "before".
	ReasonMissingBefore = string(reason.MissingBefore)
	// ReasonBadRow: "before" or "after" is neither an object nor null.
	ReasonBadRow = string(reason.BadRow)
	// ReasonBadTs: "ts_ms" is neither null nor an integer that fits in int64.
	ReasonBadTs = string(reason.BadTs)
	// ReasonBadUTF8: the value holds bytes that are not UTF-8 or a \u
	// escape of an unpaired UTF-16 surrogate; encoding/json would read
	// either as U+FFFD and merge distinct keys (internal/utf8json).
	ReasonBadUTF8 = string(reason.BadUTF8)
)

// DecodeError reports why a value is not a usable Debezium change event.
type DecodeError struct {
	// Reason is one of the Reason… constants.
	Reason string
	// Msg is a human-readable detail; it is not stable.
	Msg string
	// Pos is the position of the rejected value, as passed to Decode.
	Pos record.Position
}

func (e *DecodeError) Error() string {
	return "debezium: " + e.Reason + " at " + e.Pos.String() + ": " + e.Msg
}

func decodeErr(pos record.Position, reason, format string, args ...any) error {
	return &DecodeError{Reason: reason, Msg: fmt.Sprintf(format, args...), Pos: pos}
}

// Decode decodes one Debezium JSON change event, bare or wrapped in a
// {"schema":…,"payload":…} envelope (recognised by a "payload" field and no
// "op" field at the top level). Numbers are decoded as json.Number so they
// round-trip exactly.
//
// A value that is not UTF-8, or that escapes an unpaired UTF-16 surrogate
// (\ud800 not followed by a low surrogate, a lone \udc00) in any string,
// is refused as ReasonBadUTF8: decoded, it would hold U+FFFD instead, and
// distinct keys would become one.
//
// Rules: op must be "c", "r", "u" or "d". c, r and u need a non-null "after";
// d needs a non-null "before". "before" is dropped for c and r and "after" for
// d, so Change.Before is nil for c and r and Change.After is nil for d. An u
// event with a null "before" (a Postgres table without REPLICA IDENTITY FULL,
// for example) is accepted with a nil Before. ts_ms is optional (0 when null
// or absent). Fields other than op, before, after and ts_ms are ignored.
//
// Decode returns ErrTombstone for a tombstone, ErrTruncate for a truncate
// event and a *DecodeError for anything else it rejects. It does not retain b.
func Decode(b []byte, pos record.Position) (record.Change, error) {
	e, err := DecodeEnvelope(b, pos)
	return e.Change, err
}

// Envelope is a decoded change event with what the envelope says about its
// origin.
type Envelope struct {
	Change record.Change
	// Table is source.table, "" when absent.
	Table string
	// SourcePos is the event's position in the database's log, from the
	// envelope's source block, as a string that orders like the positions
	// of one connector (see SourcePosition); "" when the block holds none
	// this package knows.
	SourcePos string
}

// DecodeEnvelope is Decode, also returning the envelope's table and source
// position. For a truncate event it returns ErrTruncate with Table set.
func DecodeEnvelope(b []byte, pos record.Position) (Envelope, error) {
	return decodeJSON(b, pos, nil)
}

// DecodeEnvelopeKeep is DecodeEnvelope keeping, in Change.Before and
// Change.After, only the columns keep names for the envelope's
// source.table (every column of a table keep does not name; every
// column everywhere for a nil keep). The columns it drops are still
// checked like the rest of b: a dropped column that is not well-formed
// JSON or not UTF-8 is refused as it is by DecodeEnvelope. It is exactly
// DecodeEnvelope with the dropped columns deleted from the rows.
func DecodeEnvelopeKeep(b []byte, pos record.Position, keep *Keep) (Envelope, error) {
	return decodeJSON(b, pos, keep)
}

// DecodeMap is DecodeEnvelope of an envelope already decoded into JSON
// values (maps, []any, string, bool, nil, numbers as json.Number), as
// another wire format's decoder (formats/debeziumavro) produces it: the
// same rules, reasons and source positions as for JSON. env is the bare
// envelope (before, after, source, op, ts_ms); a nil env is a tombstone.
func DecodeMap(env map[string]any, pos record.Position) (Envelope, error) {
	if env == nil {
		return Envelope{}, ErrTombstone
	}
	c, err := fromEnv(env, pos)
	return envelopeOf(c, env, err)
}

func envelopeOf(c record.Change, env map[string]any, err error) (Envelope, error) {
	if env == nil {
		return Envelope{Change: c}, err
	}
	src, _ := env["source"].(map[string]any)
	e := Envelope{Change: c}
	if src != nil {
		e.Table, _ = src["table"].(string)
		if err == nil {
			e.SourcePos = SourcePosition(src)
		}
	}
	return e, err
}

// SourcePosition builds an ordered position string from a Debezium source
// block, for the connectors whose blocks carry a log position:
//
//   - Postgres: lsn                                  → "pg/<lsn, 20 digits>"
//   - MySQL: file, pos, row                         → "mysql/<file>/<pos>/<row>"
//   - SQL Server: commit_lsn, change_lsn, event_serial_no → "sqlserver/…"
//   - Oracle: scn                                   → "oracle/<scn, 24 digits>"
//   - MongoDB: ts_ms, ord                           → "mongo/<ts_ms>/<ord>"
//
// Two positions of the same connector compare (as strings) in log order;
// numbers are zero-padded. It returns "" when none applies.
func SourcePosition(src map[string]any) string {
	num := func(k string) (uint64, bool) {
		n, ok := src[k].(json.Number)
		if !ok {
			return 0, false
		}
		v, err := strconv.ParseUint(n.String(), 10, 64)
		return v, err == nil
	}
	str := func(k string) (string, bool) {
		v, ok := src[k].(string)
		return v, ok && v != ""
	}
	var buf [64]byte // the position is built here, then copied once
	if lsn, ok := num("lsn"); ok {
		return string(appendPadded(append(buf[:0], "pg/"...), lsn, 20))
	}
	if file, ok := str("file"); ok {
		if p, ok := num("pos"); ok {
			row, _ := num("row")
			b := append(append(buf[:0], "mysql/"...), file...)
			b = appendPadded(append(b, '/'), p, 20)
			return string(appendPadded(append(b, '/'), row, 10))
		}
	}
	if commit, ok := str("commit_lsn"); ok {
		change, _ := str("change_lsn")
		serial, _ := num("event_serial_no")
		b := append(append(buf[:0], "sqlserver/"...), commit...)
		b = append(append(b, '/'), change...)
		return string(appendPadded(append(b, '/'), serial, 10))
	}
	if scn, ok := str("scn"); ok && isDigits(scn) && len(scn) <= 24 {
		return "oracle/" + strings.Repeat("0", 24-len(scn)) + scn
	}
	if ord, ok := num("ord"); ok {
		if ts, ok := num("ts_ms"); ok {
			b := appendPadded(append(buf[:0], "mongo/"...), ts, 20)
			return string(appendPadded(append(b, '/'), ord, 10))
		}
	}
	return ""
}

// appendPadded appends v in decimal, zero-padded to width digits (fmt's
// %0<width>d).
func appendPadded(b []byte, v uint64, width int) []byte {
	var d [20]byte
	n := strconv.AppendUint(d[:0], v, 10)
	for range width - len(n) {
		b = append(b, '0')
	}
	return append(b, n...)
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// fromEnv builds the change of a bare envelope.
func fromEnv(env map[string]any, pos record.Position) (record.Change, error) {
	c := record.Change{Pos: pos}
	switch rawOp := env["op"].(type) {
	case nil:
		return record.Change{}, decodeErr(pos, ReasonMissingOp, "no op field")
	case string:
		if rawOp == "t" {
			return record.Change{}, ErrTruncate
		}
		op, ok := record.ParseOp(rawOp)
		if !ok {
			return record.Change{}, decodeErr(pos, ReasonUnknownOp, "op %q", truncate(rawOp))
		}
		c.Op = op
	default:
		return record.Change{}, decodeErr(pos, ReasonUnknownOp, "op is a JSON %s", kind(rawOp))
	}
	before, err := row(env, "before", pos)
	if err != nil {
		return record.Change{}, err
	}
	after, err := row(env, "after", pos)
	if err != nil {
		return record.Change{}, err
	}
	if err := setRows(&c, before, after, pos); err != nil {
		return record.Change{}, err
	}
	switch ts := env["ts_ms"].(type) {
	case nil:
	case json.Number:
		n, err := ts.Int64()
		if err != nil {
			return record.Change{}, decodeErr(pos, ReasonBadTs, "ts_ms %s is not an int64", truncate(ts.String()))
		}
		c.TsMs = n
	default:
		return record.Change{}, decodeErr(pos, ReasonBadTs, "ts_ms is a JSON %s", kind(ts))
	}
	return c, nil
}

// row returns env[field] as a Row: nil for null or absent, an error for
// anything but an object.
func row(env map[string]any, field string, pos record.Position) (record.Row, error) {
	switch r := env[field].(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return record.Row(r), nil
	default:
		return nil, decodeErr(pos, ReasonBadRow, "%s is a JSON %s", field, kind(r))
	}
}

// kind names the JSON type of a decoded value.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// truncate keeps error messages short when they quote input.
func truncate(s string) string {
	const max = 32
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// envelope is the bare Debezium envelope Encode writes.
type envelope struct {
	Before record.Row `json:"before"`
	After  record.Row `json:"after"`
	Op     string     `json:"op"`
	TsMs   int64      `json:"ts_ms"`
}

// Encode encodes c as a bare Debezium envelope
// {"before":…,"after":…,"op":…,"ts_ms":…} (object keys sorted, no trailing
// newline). Pos is not encoded. It is meant for tests and tools: Decode of the
// result gives back c (with Pos as passed to Decode) for every change Decode
// accepts.
//
// Encode panics if a row holds a value encoding/json cannot encode (a NaN
// float, a channel, …); rows produced by Decode never do.
func Encode(c record.Change) []byte {
	b, err := jsonenc.Marshal(envelope{Before: c.Before, After: c.After, Op: c.Op.String(), TsMs: c.TsMs})
	if err != nil {
		panic(fmt.Sprintf("debezium: encode: %v", err))
	}
	return b
}

// setRows puts a change's rows in c by its op: c, r and u need an after
// row, d a before row; before is dropped for c and r and after for d.
func setRows(c *record.Change, before, after record.Row, pos record.Position) error {
	switch c.Op {
	case record.OpCreate, record.OpRead:
		if after == nil {
			return decodeErr(pos, ReasonMissingAfter, "op %s without after", c.Op)
		}
		c.After = after
	case record.OpUpdate:
		if after == nil {
			return decodeErr(pos, ReasonMissingAfter, "op u without after")
		}
		c.Before, c.After = before, after
	case record.OpDelete:
		if before == nil {
			return decodeErr(pos, ReasonMissingBefore, "op d without before")
		}
		c.Before = before
	}
	return nil
}
