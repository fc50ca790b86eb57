package debezium

import (
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/joinery/joinery/internal/utf8json"
)

// fastValue decodes b, one JSON value with optional white space around
// it, into what encoding/json with UseNumber decodes it to (map[string]any,
// []any, string, json.Number, bool, nil), without reflection or the
// Decoder's buffering: encoding/json's decode was a tenth of a node's CPU
// on the cdc benchmark (docs/benchmarks.md). ok is false for anything it
// does not decode exactly as encoding/json would — bad syntax, an escape
// of a lone UTF-16 surrogate, nesting deeper than maxDepth — and the caller
// then decodes b with encoding/json, which says what is wrong in its own
// words. Bytes that are not UTF-8 are copied through as they are: the
// caller refuses them (internal/utf8json) whatever the value. Equality
// with encoding/json is checked by FuzzFastValue.
func fastValue(b []byte) (any, bool) {
	p := parser{b: b}
	p.space()
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	return v, p.i == len(p.b)
}

// maxDepth bounds fastValue's recursion; deeper values take encoding/json's
// path (which allows 10000).
const maxDepth = 256

type parser struct {
	b []byte
	i int
}

func (p *parser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (any, bool) {
	if p.i >= len(p.b) {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		if depth >= maxDepth {
			return nil, false
		}
		return p.object(depth + 1)
	case c == '[':
		if depth >= maxDepth {
			return nil, false
		}
		return p.array(depth + 1)
	case c == '"':
		s, ok := p.string()
		return s, ok
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, false
}

func (p *parser) literal(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

func (p *parser) object(depth int) (any, bool) {
	p.i++ // {
	m := map[string]any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return m, true
	}
	for {
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, false
		}
		k, ok := p.key()
		if !ok {
			return nil, false
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.space()
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		m[k] = v // a repeated key: the last wins, as in encoding/json
		p.space()
		if p.i >= len(p.b) {
			return nil, false
		}
		switch p.b[p.i] {
		case '}':
			p.i++
			return m, true
		case ',':
			p.i++
			p.space()
		default:
			return nil, false
		}
	}
}

func (p *parser) array(depth int) (any, bool) {
	p.i++ // [
	a := []any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return a, true
	}
	for {
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		p.space()
		if p.i >= len(p.b) {
			return nil, false
		}
		switch p.b[p.i] {
		case ']':
			p.i++
			return a, true
		case ',':
			p.i++
			p.space()
		default:
			return nil, false
		}
	}
}

// number reads a JSON number literal as a json.Number.
func (p *parser) number() (any, bool) {
	b, i := p.b, p.i
	start := i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return nil, false
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return nil, false
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	p.i = i
	return json.Number(b[start:i]), true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// key reads an object's key: the envelope's and the source block's own
// names without a copy (they are in every event), any other as string.
func (p *parser) key() (string, bool) {
	b := p.b[p.i+1:]
	if j := indexQuote(b); j >= 0 {
		if k, ok := envelopeKey(b[:j]); ok {
			p.i += j + 2
			return k, true
		}
	}
	return p.string()
}

// indexQuote is the index of the first '"' in b, -1 if none or if a
// backslash comes before it.
func indexQuote(b []byte) int {
	for i, c := range b {
		switch c {
		case '"':
			return i
		case '\\':
			return -1
		}
	}
	return -1
}

// envelopeKey returns the constant of a name a Debezium envelope or source
// block holds (switching on string(b) does not copy b).
func envelopeKey(b []byte) (string, bool) {
	switch string(b) {
	case "before":
		return "before", true
	case "after":
		return "after", true
	case "source":
		return "source", true
	case "op":
		return "op", true
	case "ts_ms":
		return "ts_ms", true
	case "ts_us":
		return "ts_us", true
	case "ts_ns":
		return "ts_ns", true
	case "transaction":
		return "transaction", true
	case "schema":
		return "schema", true
	case "payload":
		return "payload", true
	case "version":
		return "version", true
	case "connector":
		return "connector", true
	case "name":
		return "name", true
	case "snapshot":
		return "snapshot", true
	case "db":
		return "db", true
	case "table":
		return "table", true
	case "lsn":
		return "lsn", true
	case "txId":
		return "txId", true
	case "xmin":
		return "xmin", true
	case "sequence":
		return "sequence", true
	case "file":
		return "file", true
	case "pos":
		return "pos", true
	case "row":
		return "row", true
	case "server_id":
		return "server_id", true
	case "id":
		return "id", true
	}
	return "", false
}

// string reads a JSON string. One without escapes is one copy of its
// bytes.
func (p *parser) string() (string, bool) {
	b := p.b
	start := p.i + 1
	for i := start; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			p.i = i + 1
			return string(b[start:i]), true
		case c == '\\':
			return p.escaped(start, i)
		case c < 0x20:
			return "", false
		}
	}
	return "", false
}

// escaped reads the rest of a string that has an escape at i.
func (p *parser) escaped(start, i int) (string, bool) {
	b := p.b
	out := make([]byte, 0, len(b)-start)
	out = append(out, b[start:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			p.i = i + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(b) {
			return "", false
		}
		switch e := b[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := utf8json.Hex4(b, i+2)
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				// Only a high surrogate escape followed by a low one
				// decodes to what it spells.
				r2, ok := rune(0), false
				if i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
					r2, ok = utf8json.Hex4(b, i+8)
				}
				d := utf16.DecodeRune(r, r2)
				if !ok || d == utf8.RuneError {
					return "", false
				}
				r = d
				i += 6
			}
			out = utf8.AppendRune(out, r)
			i += 6
			continue
		default:
			return "", false
		}
		i += 2
	}
	return "", false
}
