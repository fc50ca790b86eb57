// Package stateparts is the packed form of a key state stored in parts: a
// base and named parts (persistence.Snapshot.Parts), as a store's Load
// returns them in Snapshot.State and as keycore decodes them. It is a leaf
// (standard library only) so that both the persistence tree and keycore,
// which may not import each other, share it.
//
// It owns the byte layout and the fold of a delta into a set of parts; it
// must not know what the base or the parts mean (keycore does) or where
// they are kept (the stores do).
//
// Packed layout (version 1):
//
//	Marker | uvarint len(base) | base | n × (uvarint len(name), name, uvarint len(value), value)
//
// with the parts in ascending byte order of their names and no empty name
// or value. Marker is a byte no other state encoding starts with (keycore's
// begins with its version, 1).
package stateparts

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Marker is the first byte of a packed state.
const Marker byte = 0xFE

// Part is one named piece of a key's state. In a delta an empty Value
// deletes the part.
type Part struct {
	Name  string
	Value []byte
}

// ErrCorrupt is wrapped by Unpack's errors.
var ErrCorrupt = errors.New("stateparts: corrupt packed state")

// IsPacked reports whether b is a packed state.
func IsPacked(b []byte) bool { return len(b) > 0 && b[0] == Marker }

// Pack returns base and parts in the packed layout. parts must hold no
// empty Value and no name twice; Pack sorts a copy by name.
func Pack(base []byte, parts []Part) []byte {
	n := 1 + binary.MaxVarintLen64 + len(base)
	for _, p := range parts {
		n += 2*binary.MaxVarintLen64 + len(p.Name) + len(p.Value)
	}
	sorted := slices.Clone(parts)
	Sort(sorted)
	b := make([]byte, 0, n)
	b = append(b, Marker)
	b = binary.AppendUvarint(b, uint64(len(base)))
	b = append(b, base...)
	for _, p := range sorted {
		b = binary.AppendUvarint(b, uint64(len(p.Name)))
		b = append(b, p.Name...)
		b = binary.AppendUvarint(b, uint64(len(p.Value)))
		b = append(b, p.Value...)
	}
	return b
}

// Sort orders parts by name, in place.
func Sort(parts []Part) {
	slices.SortFunc(parts, func(a, b Part) int { return strings.Compare(a.Name, b.Name) })
}

// Unpack splits a packed state. The base and the values alias b; the parts
// come in ascending name order.
func Unpack(b []byte) (base []byte, parts []Part, err error) {
	if !IsPacked(b) {
		return nil, nil, fmt.Errorf("%w: no marker", ErrCorrupt)
	}
	b = b[1:]
	field := func(what string) ([]byte, error) {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, fmt.Errorf("%w: bad %s", ErrCorrupt, what)
		}
		v := b[k : k+int(l)]
		b = b[k+int(l):]
		return v, nil
	}
	if base, err = field("base"); err != nil {
		return nil, nil, err
	}
	for len(b) > 0 {
		name, err := field("part name")
		if err != nil {
			return nil, nil, err
		}
		v, err := field("part value")
		if err != nil {
			return nil, nil, err
		}
		if len(name) == 0 || len(v) == 0 || (len(parts) > 0 && parts[len(parts)-1].Name >= string(name)) {
			return nil, nil, fmt.Errorf("%w: part %q out of order or empty", ErrCorrupt, name)
		}
		parts = append(parts, Part{Name: string(name), Value: v})
	}
	return base, parts, nil
}

// Apply folds a delta into the parts m holds (name -> value): a part with a
// Value sets it, one without deletes it; later parts of delta win.
func Apply(m map[string][]byte, delta []Part) {
	for _, p := range delta {
		if len(p.Value) == 0 {
			delete(m, p.Name)
		} else {
			m[p.Name] = p.Value
		}
	}
}

// Merge returns the delta that applying a then b amounts to: b's parts
// override a's of the same name, in one list without repeated names (new
// slice; values shared).
func Merge(a, b []Part) []Part {
	at := make(map[string]int, len(a)+len(b))
	out := make([]Part, 0, len(a)+len(b))
	for _, list := range [][]Part{a, b} {
		for _, p := range list {
			if i, ok := at[p.Name]; ok {
				out[i] = p
				continue
			}
			at[p.Name] = len(out)
			out = append(out, p)
		}
	}
	return out
}
