// Package utf8json owns the one check that a JSON text decodes to the
// strings it spells: its bytes are UTF-8 and every \u escape of a UTF-16
// surrogate (\uD800-\uDFFF, hex in either case) is half of a high+low
// pair. encoding/json silently turns an invalid byte, a high surrogate not
// followed by a low one and a lone low surrogate into U+FFFD, so
// "\ud800k" and "\udbffk" would both become "\uFFFDk": two users merged
// into one key. Every decoder of input JSON (formats/debezium,
// formats/changelog, the node's event-time decoder, HTTP ingest) runs
// Check first and refuses what it reports as bad-utf8
// (sinks/deadletter/reason.BadUTF8).
//
// The scan reads raw bytes and needs no parse: in JSON a backslash occurs
// only inside strings, and it is always the start of a two-byte escape or
// of a \uXXXX escape, so an escaped backslash (\\ud800, the six
// characters "\ud800" in the value) is stepped over whole. Text that is
// not valid JSON is the decoder's to refuse; Check never panics on it.
package utf8json

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// Error is what Check found: the offset of the first offending byte (of
// the backslash, for an escape) and what is wrong there.
type Error struct {
	Offset int
	Msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg)
}

// Check returns an *Error for the first byte of b that is not UTF-8 or,
// when all are, the first unpaired surrogate escape; nil when b decodes
// to exactly the strings it spells.
func Check(b []byte) error {
	if !utf8.Valid(b) {
		return &Error{Offset: invalidAt(b), Msg: "not valid UTF-8"}
	}
	return Surrogates(b)
}

// Surrogates returns an *Error for the first \u escape of a UTF-16
// surrogate in b that is not a high surrogate directly followed by a \u
// escape of a low one. It does not look at the bytes between escapes.
func Surrogates(b []byte) error {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return nil
		}
		i += j
		if i+1 >= len(b) {
			return nil
		}
		if b[i+1] != 'u' {
			i += 2 // \" \\ \/ \b \f \n \r \t (or invalid, the decoder's)
			continue
		}
		r, ok := Hex4(b, i+2)
		if !ok {
			i += 2
			continue
		}
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if i+11 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
				if lo, ok := Hex4(b, i+8); ok && lo >= 0xDC00 && lo < 0xE000 {
					i += 12
					continue
				}
			}
			return &Error{Offset: i, Msg: fmt.Sprintf(`\u%04X is a high surrogate not followed by a low one (\uDC00-\uDFFF); a decoder would read it as U+FFFD`, r)}
		case r >= 0xDC00 && r < 0xE000:
			return &Error{Offset: i, Msg: fmt.Sprintf(`\u%04X is a low surrogate without a high one before it; a decoder would read it as U+FFFD`, r)}
		}
		i += 6
	}
}

// Hex4 decodes the four hex digits of a \u escape at b[i:] (false when
// there are not four).
func Hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// invalidAt is the offset of the first byte of b that does not start a
// valid UTF-8 sequence.
func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}
