package debezium

import (
	"encoding/json"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// The functions of this file walk JSON text that jsontext has already
// validated (one well-formed value, duplicate names and any bytes inside
// strings allowed) and that utf8json.Check has passed. They do not check
// syntax again: every index they are handed is the start of a value,
// a name or whitespace before one, as the grammar puts it there.

// skipWS returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just after the string that starts (with
// its quote) at b[i], and whether the string holds an escape.
func stringEnd(b []byte, i int) (end int, esc bool) {
	// A byte loop: column names and values are short, and two
	// IndexByte calls per string cost more than they save.
	for i++; ; i++ {
		switch b[i] {
		case '"':
			return i + 1, esc
		case '\\':
			// An escape is a backslash and one more byte (\uXXXX goes
			// on with hex digits, which are neither quote nor
			// backslash).
			esc = true
			i++
		}
	}
}

// scalarEnd returns the index just after the number or literal at b[i].
func scalarEnd(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// skipValue returns the index just after the value at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		e, _ := stringEnd(b, i)
		return e
	case '{', '[':
		depth := 0
		for {
			switch b[i] {
			case '"':
				i, _ = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	return scalarEnd(b, i)
}

// unquote returns the string the JSON string raw (quotes included)
// stands for.
func unquote(raw []byte) string {
	var buf [64]byte
	out, _ := jsontext.AppendUnquote(buf[:0], raw)
	return string(out)
}

// jsonKind names the JSON type of the value starting with byte c, as
// kind names a decoded value.
func jsonKind(c byte) string {
	switch c {
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean"
	case '"':
		return "string"
	case '[':
		return "array"
	case '{':
		return "object"
	}
	return "number"
}

// walker decodes validated JSON into the values encoding/json gives with
// UseNumber: map[string]any, []any, string, json.Number, bool and nil.
// Object names are interned in names, so a row's column names cost no
// allocation once the walker's cache has seen them.
type walker struct {
	b     []byte
	names *nameCache
}

// nameCache interns object names. It is bounded: past maxNames names, or
// for a name longer than maxNameLen bytes, a name is allocated per use.
type nameCache struct {
	m map[string]string
}

const (
	maxNames   = 4096
	maxNameLen = 64
)

var namePool = sync.Pool{New: func() any { return &nameCache{m: make(map[string]string)} }}

// name returns the name whose JSON string is b[s:e].
func (w *walker) name(s, e int, esc bool) string {
	raw := w.b[s:e]
	if esc {
		return unquote(raw)
	}
	inner := raw[1 : len(raw)-1]
	if w.names == nil || len(inner) > maxNameLen {
		return string(inner)
	}
	if n, ok := w.names.m[string(inner)]; ok {
		return n
	}
	n := string(inner)
	if len(w.names.m) < maxNames {
		w.names.m[n] = n
	}
	return n
}

// value decodes the value at b[i] and returns it and the index after it.
func (w *walker) value(i int) (any, int) {
	b := w.b
	switch b[i] {
	case '"':
		e, esc := stringEnd(b, i)
		if esc {
			return unquote(b[i:e]), e
		}
		return string(b[i+1 : e-1]), e
	case '{':
		return w.object(i, nil)
	case '[':
		return w.array(i)
	case 't':
		return true, i + 4
	case 'f':
		return false, i + 5
	case 'n':
		return nil, i + 4
	}
	e := scalarEnd(b, i)
	return json.Number(b[i:e]), e
}

// object decodes the object at b[i], keeping only the members keep has
// when keep is not nil; a later member of the same name replaces an
// earlier one, as encoding/json does for a map.
func (w *walker) object(i int, keep *columnSet) (map[string]any, int) {
	b := w.b
	m := make(map[string]any)
	i = skipWS(b, i+1)
	if b[i] == '}' {
		return m, i + 1
	}
	for {
		ns := i
		ne, esc := stringEnd(b, i)
		i = skipWS(b, skipWS(b, ne)+1) // past the colon
		if keep == nil {
			var v any
			v, i = w.value(i)
			m[w.name(ns, ne, esc)] = v
		} else if name, ok := keep.lookup(b[ns:ne], esc); ok {
			var v any
			v, i = w.value(i)
			m[name] = v
		} else {
			i = skipValue(b, i)
		}
		i = skipWS(b, i)
		if b[i] == '}' {
			return m, i + 1
		}
		i = skipWS(b, i+1) // past the comma
	}
}

// array decodes the array at b[i]; an empty array is a non-nil []any, as
// encoding/json gives.
func (w *walker) array(i int) ([]any, int) {
	b := w.b
	a := []any{}
	i = skipWS(b, i+1)
	if b[i] == ']' {
		return a, i + 1
	}
	for {
		var v any
		v, i = w.value(i)
		a = append(a, v)
		i = skipWS(b, i)
		if b[i] == ']' {
			return a, i + 1
		}
		i = skipWS(b, i+1)
	}
}

// members calls f for each member of the object at b[i] with its name's
// JSON string b[ns:ne] (esc when it holds an escape) and the index of its
// value; f returns the index after the value. members returns the index
// after the object.
func members(b []byte, i int, f func(ns, ne int, esc bool, v int) int) int {
	i = skipWS(b, i+1)
	if b[i] == '}' {
		return i + 1
	}
	for {
		ns := i
		ne, esc := stringEnd(b, i)
		i = skipWS(b, skipWS(b, ne)+1)
		i = skipWS(b, f(ns, ne, esc, i))
		if b[i] == '}' {
			return i + 1
		}
		i = skipWS(b, i+1)
	}
}
