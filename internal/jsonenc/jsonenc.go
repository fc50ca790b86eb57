// Package jsonenc owns Joinery's reflection-free JSON encoding of decoded
// JSON values (rows): byte for byte what encoding/json writes with HTML
// escaping off, for the value types encoding/json decodes into. Outputs
// are encoded on the hot path for the key's outbox in its state, and their
// rows' JSON is reused by the sink line (record.Output.RowJSON);
// encoding/json's reflection was 8% and 8% of a node's CPU there
// (docs/performance.md). Equality with encoding/json is
// checked by table and fuzz tests. Marshal (marshal.go) is the one
// encoding/json path with HTML escaping off, for any other value; joins/
// may import this package (internal/lint).
package jsonenc

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/joinery/joinery/record"
)

// AppendValue appends v as encoding/json (HTML escaping off) encodes it,
// for the types encoding/json decodes into — nil, bool, float64, string,
// json.Number, []any, map[string]any — and record.Row. ok is false for
// any other type, NaN and infinities, and an invalid json.Number: the
// caller then encodes the value the slow way (and gets encoding/json's
// error, if any).
func AppendValue(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, x), true
	case string:
		return AppendString(b, x), true
	case float64:
		return AppendFloat(b, x)
	case json.Number:
		if x == "" {
			return append(b, '0'), true
		}
		if !ValidNumber(string(x)) {
			return b, false
		}
		return append(b, x...), true
	case map[string]any:
		if x == nil {
			return append(b, "null"...), true
		}
		return AppendObject(b, x)
	case record.Row:
		if x == nil {
			return append(b, "null"...), true
		}
		return AppendObject(b, x)
	case []any:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = AppendValue(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	}
	return b, false
}

// Exact returns what appendFn appends to an empty slice, in a slice of
// exactly its length: appendFn writes into a pooled scratch buffer and the
// result is copied out once. Encodings kept long (a key's outbox entries,
// its rows' parts) then cost one allocation each, where appending to nil
// grew the slice three or four times (runtime.growslice was a third of
// encoding an outbox entry) and left up to half of it unused. ok is
// appendFn's; the bytes are nil when it is false.
func Exact(appendFn func([]byte) ([]byte, bool)) ([]byte, bool) {
	buf := scratch.Get().(*[]byte)
	b, ok := appendFn((*buf)[:0])
	var out []byte
	if ok {
		out = append(make([]byte, 0, len(b)), b...)
	}
	if cap(b) <= 64<<10 { // one large value's buffer is left to the collector
		*buf = b[:0]
		scratch.Put(buf)
	}
	return out, ok
}

// AppendHTMLEscaped appends src, JSON text as this package (or
// encoding/json with HTML escaping off) writes it, as encoding/json writes
// it with HTML escaping on: each '<', '>' and '&' as \u003c, \u003e and
// \u0026. The two differ only there, and those bytes occur in JSON text
// only inside strings. src may be part of b[:len(b)] (it is read, and b
// written only after len(b)).
func AppendHTMLEscaped(b, src []byte) []byte {
	const hex = "0123456789abcdef"
	for {
		i := bytes.IndexAny(src, "<>&")
		if i < 0 {
			return append(b, src...)
		}
		b = append(b, src[:i]...)
		b = append(b, '\\', 'u', '0', '0', hex[src[i]>>4], hex[src[i]&0xf])
		src = src[i+1:]
	}
}

var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// ValidNumber reports whether s is a JSON number literal, as
// encoding/json checks a json.Number it encodes: -?(0|[1-9][0-9]*)
// (\.[0-9]+)?([eE][+-]?[0-9]+)?, no space. (json.Valid costs a scanner
// and a copy of s per number: it was most of a row's encoding.)
func ValidNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i == len(s):
		return false
	case s[i] == '0':
		i++
	case s[i] >= '1' && s[i] <= '9':
		for i++; i < len(s) && isDigit(s[i]); i++ {
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i == len(s) || !isDigit(s[i]) {
			return false
		}
		for i++; i < len(s) && isDigit(s[i]); i++ {
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || !isDigit(s[i]) {
			return false
		}
		for i++; i < len(s) && isDigit(s[i]); i++ {
		}
	}
	return i == len(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// AppendObject is AppendValue for a map: keys sorted, as encoding/json.
// The entries are taken with their values in one pass over the map and
// sorted as pairs: no second lookup of each key.
func AppendObject(b []byte, m map[string]any) ([]byte, bool) {
	var arr [16]entry
	es := arr[:0]
	for k, v := range m {
		es = append(es, entry{k, v})
	}
	if len(es) <= len(arr) {
		// An insertion sort, as slices.Sort's for this size, without a
		// call per comparison.
		for i := 1; i < len(es); i++ {
			for j := i; j > 0 && es[j].k < es[j-1].k; j-- {
				es[j], es[j-1] = es[j-1], es[j]
			}
		}
	} else {
		slices.SortFunc(es, func(x, y entry) int { return strings.Compare(x.k, y.k) })
	}
	b = append(b, '{')
	for i, e := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, e.k)
		b = append(b, ':')
		var ok bool
		if b, ok = AppendValue(b, e.v); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// entry is one key of an object with its value (AppendObject).
type entry struct {
	k string
	v any
}

// AppendFloat formats like encoding/json: shortest representation, 'e'
// format outside [1e-6, 1e21), exponents without a leading zero.
func AppendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b) - start
		if n >= 4 && b[len(b)-4] == 'e' && b[len(b)-3] == '-' && b[len(b)-2] == '0' {
			b[len(b)-2] = b[len(b)-1]
			b = b[:len(b)-1]
		}
	}
	return b, true
}

const hexDigits = "0123456789abcdef"

// AppendString quotes s as encoding/json does with HTML escaping off:
// '"', '\\' and control characters escaped, invalid UTF-8 as \ufffd, and
// U+2028/U+2029 escaped.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendOutput appends o as encoding/json (HTML escaping off) encodes a
// record.Output: {"id","op","pk","row"} then "ts" and "seq" when not zero.
// The pk is o.PK as a JSON string, or — when pk is not nil — pk itself,
// which must be compact, valid JSON text (the changelog format writes the
// key's JSON array there). The row is o.RowJSON when not nil (the row's
// encoding, cached by whoever encoded it first), else o.Row encoded. ok
// is false as for AppendValue.
func AppendOutput(b []byte, o *record.Output, pk []byte) ([]byte, bool) {
	b, _, _, ok := AppendOutputRow(b, o, pk)
	return b, ok
}

// AppendOutputRow is AppendOutput, also returning where the row's JSON
// is in b, b[start:end] (for callers that cache it: record.Output.
// RowJSON).
func AppendOutputRow(b []byte, o *record.Output, pk []byte) (_ []byte, start, end int, ok bool) {
	return appendOutputRow(b, o, pk, false)
}

// AppendOutputRawPK is AppendOutput with o.PK itself as the pk's JSON:
// the caller checked that it is valid JSON without insignificant space
// (as encoding/json would write it), so no []byte copy of it is made.
func AppendOutputRawPK(b []byte, o *record.Output) ([]byte, bool) {
	b, _, _, ok := appendOutputRow(b, o, nil, true)
	return b, ok
}

func appendOutputRow(b []byte, o *record.Output, pk []byte, rawPK bool) (_ []byte, start, end int, ok bool) {
	b = append(b, `{"id":`...)
	b = AppendString(b, o.ID)
	b = append(b, `,"op":"`...)
	b = append(b, o.Kind.String()...)
	b = append(b, `","pk":`...)
	if rawPK {
		b = append(b, o.PK...)
	} else if pk != nil {
		b = append(b, pk...)
	} else {
		b = AppendString(b, o.PK)
	}
	b = append(b, `,"row":`...)
	start = len(b)
	if o.RowJSON != nil {
		b = append(b, o.RowJSON...)
	} else if b, ok = AppendValue(b, map[string]any(o.Row)); !ok {
		return b, start, len(b), false
	}
	end = len(b)
	if o.Ts != 0 {
		b = append(b, `,"ts":`...)
		b = strconv.AppendInt(b, o.Ts, 10)
	}
	if o.Seq != 0 {
		b = append(b, `,"seq":`...)
		b = strconv.AppendUint(b, o.Seq, 10)
	}
	return append(b, '}'), start, end, true
}
