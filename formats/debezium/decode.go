package debezium

import (
	"bytes"
	"io"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/joinery/joinery/internal/utf8json"
	"github.com/joinery/joinery/record"
)

// validOpts makes jsontext accept what encoding/json accepts: duplicate
// names (the last one wins) and any bytes inside strings (utf8json.Check
// refuses those afterwards, so that a value that is both not JSON and not
// UTF-8 is refused as not JSON, as encoding/json's decoder does).
var validOpts = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// valid checks that b is one JSON value and UTF-8 without unpaired
// surrogate escapes, and returns the refusal otherwise.
func valid(b []byte, pos record.Position) error {
	if !jsontext.Value(b).IsValid(validOpts...) {
		return decodeErr(pos, ReasonNotJSON, "%s", syntaxError(b))
	}
	if err := utf8json.Check(b); err != nil {
		return decodeErr(pos, ReasonBadUTF8, "%v", err)
	}
	return nil
}

// syntaxError says why b is not one JSON value.
func syntaxError(b []byte) string {
	d := jsontext.NewDecoder(bytes.NewReader(b), validOpts...)
	if _, err := d.ReadValue(); err != nil {
		return err.Error()
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return "trailing data after the JSON value"
	}
	return "not a JSON value"
}

// envFields holds where the envelope's members' values start in the
// input, plus one (0 when absent), and the rows when they were decoded
// during the scan. A later member of the same name replaces an earlier
// one.
type envFields struct {
	op, before, after, source, tsMs, payload int
	beforeRow, afterRow                      map[string]any
}

// scanEnvelope finds the members of the envelope object at w.b[i]. With
// rows set it also decodes the before and after objects, whole, as it
// meets them (when no filter applies: the table, which Debezium writes
// after the rows, does not matter then), instead of stepping over them
// and coming back.
func (w *walker) scanEnvelope(i int, rows bool) envFields {
	b := w.b
	var f envFields
	row := func(v int, dst *map[string]any) int {
		if rows && b[v] == '{' {
			m, end := w.object(v, nil)
			*dst = m
			return end
		}
		*dst = nil
		return skipValue(b, v)
	}
	members(b, i, func(ns, ne int, esc bool, v int) int {
		name := b[ns+1 : ne-1]
		if esc {
			name = []byte(unquote(b[ns:ne]))
		}
		switch string(name) {
		case "op":
			f.op = v + 1
		case "before":
			f.before = v + 1
			return row(v, &f.beforeRow)
		case "after":
			f.after = v + 1
			return row(v, &f.afterRow)
		case "source":
			f.source = v + 1
		case "ts_ms":
			f.tsMs = v + 1
		case "payload":
			f.payload = v + 1
		}
		return skipValue(b, v)
	})
	return f
}

// sourceColumns are the members of the source block that Envelope uses:
// the table and what SourcePosition reads.
var sourceColumns = newColumnSet([]string{
	"table", "lsn", "file", "pos", "row", "commit_lsn", "change_lsn", "event_serial_no", "scn", "ord", "ts_ms",
})

// decodeJSON is DecodeEnvelopeKeep.
func decodeJSON(b []byte, pos record.Position, keep *Keep) (Envelope, error) {
	if len(bytes.TrimSpace(b)) == 0 { // Unicode spaces too, \v and U+00A0
		return Envelope{}, ErrTombstone
	}
	if err := valid(b, pos); err != nil {
		return Envelope{}, err
	}
	i := skipWS(b, 0)
	switch b[i] {
	case 'n':
		return Envelope{}, ErrTombstone
	case '{':
	default:
		return Envelope{}, decodeErr(pos, ReasonNotObject, "value is a JSON %s", jsonKind(b[i]))
	}
	names := namePool.Get().(*nameCache)
	defer namePool.Put(names)
	w := walker{b: b, names: names}
	f := w.scanEnvelope(i, keep == nil)
	if f.payload != 0 && f.op == 0 {
		switch p := f.payload - 1; b[p] {
		case 'n':
			return Envelope{}, ErrTombstone
		case '{':
			f = w.scanEnvelope(p, keep == nil)
		default:
			return Envelope{}, decodeErr(pos, ReasonNotObject, "payload is a JSON %s", jsonKind(b[p]))
		}
	}
	var e Envelope
	var src map[string]any
	if f.source != 0 && b[f.source-1] == '{' {
		src, _ = w.object(f.source-1, sourceColumns)
		e.Table, _ = src["table"].(string)
	}
	c, err := w.change(&f, pos, keep.of(e.Table))
	if err != nil {
		return e, err
	}
	e.Change = c
	if src != nil {
		e.SourcePos = SourcePosition(src)
	}
	return e, nil
}

// change builds the change of the bare envelope whose members are f, by
// the rules of fromEnv.
func (w *walker) change(f *envFields, pos record.Position, keep *columnSet) (record.Change, error) {
	b := w.b
	c := record.Change{Pos: pos}
	if f.op == 0 || b[f.op-1] == 'n' {
		return record.Change{}, decodeErr(pos, ReasonMissingOp, "no op field")
	}
	o := f.op - 1
	if b[o] != '"' {
		return record.Change{}, decodeErr(pos, ReasonUnknownOp, "op is a JSON %s", jsonKind(b[o]))
	}
	oe, esc := stringEnd(b, o)
	var ok bool
	if esc {
		s := unquote(b[o:oe])
		if s == "t" {
			return record.Change{}, ErrTruncate
		}
		if c.Op, ok = record.ParseOp(s); !ok {
			return record.Change{}, decodeErr(pos, ReasonUnknownOp, "op %q", truncate(s))
		}
	} else {
		s := b[o+1 : oe-1]
		if len(s) == 1 {
			switch s[0] {
			case 't':
				return record.Change{}, ErrTruncate
			case 'c', 'r', 'u', 'd':
				c.Op, ok = record.Op(s[0]), true
			}
		}
		if !ok {
			return record.Change{}, decodeErr(pos, ReasonUnknownOp, "op %q", truncate(string(s)))
		}
	}
	// A row the op drops is checked, not decoded.
	before, err := w.row(f.before, f.beforeRow, "before", pos, keep, c.Op == record.OpUpdate || c.Op == record.OpDelete)
	if err != nil {
		return record.Change{}, err
	}
	after, err := w.row(f.after, f.afterRow, "after", pos, keep, c.Op != record.OpDelete)
	if err != nil {
		return record.Change{}, err
	}
	if err := setRows(&c, before, after, pos); err != nil {
		return record.Change{}, err
	}
	if f.tsMs != 0 {
		switch t := f.tsMs - 1; b[t] {
		case 'n':
		case '"', 't', 'f', '[', '{':
			return record.Change{}, decodeErr(pos, ReasonBadTs, "ts_ms is a JSON %s", jsonKind(b[t]))
		default:
			num := b[t:scalarEnd(b, t)]
			n, ok := parseInt64(num)
			if !ok {
				return record.Change{}, decodeErr(pos, ReasonBadTs, "ts_ms %s is not an int64", truncate(string(num)))
			}
			c.TsMs = n
		}
	}
	return c, nil
}

// row returns the row whose value starts at b[at-1] (at 0: absent): nil
// for null or absent, an error for anything but an object, and the
// object's kept columns when use is set (nil when it is not: the op
// drops that row). decoded is the object when the scan decoded it.
func (w *walker) row(at int, decoded map[string]any, field string, pos record.Position, keep *columnSet, use bool) (record.Row, error) {
	if at == 0 {
		return nil, nil
	}
	switch i := at - 1; w.b[i] {
	case 'n':
		return nil, nil
	case '{':
		if !use {
			return nil, nil
		}
		if decoded != nil {
			return decoded, nil
		}
		m, _ := w.object(i, keep)
		return m, nil
	default:
		return nil, decodeErr(pos, ReasonBadRow, "%s is a JSON %s", field, jsonKind(w.b[i]))
	}
}

// parseInt64 is strconv.ParseInt(string(num), 10, 64) for the text of a
// JSON number (no sign but a leading minus, no leading zeros).
func parseInt64(num []byte) (int64, bool) {
	neg := num[0] == '-'
	if neg {
		num = num[1:]
	}
	if len(num) == 0 || len(num) > 19 {
		return 0, false // 20 digits without leading zeros are ≥ 1e19 > 2^63
	}
	var u uint64
	for _, d := range num {
		if d < '0' || d > '9' {
			return 0, false
		}
		u = u*10 + uint64(d-'0')
	}
	switch {
	case !neg && u > 1<<63-1, neg && u > 1<<63:
		return 0, false
	case neg:
		return -int64(u), true
	}
	return int64(u), true
}

// DecodeObject decodes one JSON object, such as a row of a source whose
// messages are plain JSON rows, into the values Decode puts in a Row:
// numbers as json.Number keeping their text, strings, bools, nil, nested
// map[string]any and []any; a later member of the same name replaces an
// earlier one. It refuses, as a *DecodeError, what is not one JSON value
// (ReasonNotJSON, empty input included), what is not UTF-8 or escapes an
// unpaired surrogate (ReasonBadUTF8) and a value that is not an object,
// null included (ReasonNotObject). It does not retain b.
func DecodeObject(b []byte, pos record.Position) (record.Row, error) {
	return DecodeObjectKeep(b, pos, nil, "")
}

// DecodeObjectKeep is DecodeObject keeping only the members keep names
// for table (all of them for a nil keep or a table it does not name).
// Dropped members are checked like the rest of b.
func DecodeObjectKeep(b []byte, pos record.Position, keep *Keep, table string) (record.Row, error) {
	if err := valid(b, pos); err != nil {
		return nil, err
	}
	i := skipWS(b, 0)
	if b[i] != '{' {
		return nil, decodeErr(pos, ReasonNotObject, "value is a JSON %s", jsonKind(b[i]))
	}
	names := namePool.Get().(*nameCache)
	defer namePool.Put(names)
	w := walker{b: b, names: names}
	m, _ := w.object(i, keep.of(table))
	return m, nil
}
