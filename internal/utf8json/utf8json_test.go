package utf8json

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name, in string
		at       int // offset of the error, -1 for none
		msg      string
	}{
		{"plain", `{"id":"k","v":[1,"x"]}`, -1, ""},
		{"no strings", `[1,2,null]`, -1, ""},
		{"empty", ``, -1, ""},
		{"bmp escapes", `{"a":"\u00e9\u4e2d\uFFFD\ue000\ud7ff"}`, -1, ""},
		{"a pair", `{"a":"\ud83d\ude00"}`, -1, ""},
		{"a pair upper case", `{"a":"\uD83D\uDE00"}`, -1, ""},
		{"a pair mixed case", `{"a":"\uDbFf\udFfF"}`, -1, ""},
		{"two pairs", `"\ud800\udc00\udbff\udfff"`, -1, ""},
		{"literal U+FFFD", "{\"a\":\"\uFFFD\"}", -1, ""},
		{"raw supplementary", `{"a":"😀"}`, -1, ""},
		{"escaped backslash then u", `{"a":"\\ud800k"}`, -1, ""},
		{"escaped backslash in a key", `{"\\udc00":1}`, -1, ""},
		{"three backslashes", `"\\\ud800\udc00"`, -1, ""},
		{"other escapes", `"\"\\\/\b\f\n\r\t"`, -1, ""},
		{"lone high", `{"id":"\ud800k"}`, 7, `\uD800 is a high surrogate`},
		{"lone high upper", `{"id":"\uDBFFk"}`, 7, `\uDBFF is a high surrogate`},
		{"lone high at the end", `"x\ud800"`, 2, "high surrogate"},
		{"high then high", `"\ud800\ud800\udc00"`, 1, "high surrogate"},
		{"high then bmp escape", `"\ud800\u0041"`, 1, "high surrogate"},
		{"high then raw", `"\ud800A"`, 1, "high surrogate"},
		{"high then raw supplementary", `"\ud83d😀"`, 1, "high surrogate"},
		{"lone low", `{"id":"\udc00k"}`, 7, `\uDC00 is a low surrogate`},
		{"low then high", `"\udfff\ud800"`, 1, "low surrogate"},
		{"lone in a key", `{"\udfffk":1}`, 2, "low surrogate"},
		{"after a pair", `"\ud800\udc00\udc00"`, 13, "low surrogate"},
		{"after an escaped backslash", `"\\\ud800"`, 3, "high surrogate"},
		{"after an escaped quote", `"\"\udc00"`, 3, "low surrogate"},
		{"invalid byte", "{\"a\":\"x\xffy\"}", 7, "not valid UTF-8"},
		{"truncated sequence", "\"\xc3\"", 1, "not valid UTF-8"},
		{"encoded surrogate", "\"\xed\xa0\x80\"", 1, "not valid UTF-8"},
		{"invalid byte before a lone escape", "\"\\ud800\xff\"", 7, "not valid UTF-8"},
		{"truncated escape", `"\ud8`, -1, ""},
		{"bad hex", `"\ud8zz"`, -1, ""},
		{"trailing backslash", `"\`, -1, ""},
	} {
		err := Check([]byte(c.in))
		var e *Error
		switch {
		case c.at < 0 && err != nil:
			t.Errorf("%s: Check(%s) = %v, want nil", c.name, c.in, err)
		case c.at >= 0 && (!errors.As(err, &e) || e.Offset != c.at || !strings.Contains(e.Msg, c.msg)):
			t.Errorf("%s: Check(%s) = %v, want an *Error at byte %d saying %q", c.name, c.in, err, c.at, c.msg)
		}
	}
}

// decodeStrings is a reference for Check, written the other way round: it
// walks the strings of the valid JSON text b (state: in a string or not),
// decodes each into UTF-16 code units (escapes as they are, raw runes
// encoded), and reports whether every surrogate unit is paired, and the
// number of U+FFFD the strings hold.
func decodeStrings(b []byte) (paired bool, fffd int) {
	paired = true
	s := string(b)
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			continue
		}
		var units []uint16
		for i++; s[i] != '"'; {
			if s[i] == '\\' {
				if s[i+1] == 'u' {
					var r rune
					for _, c := range s[i+2 : i+6] {
						r = r<<4 | rune(strings.IndexRune("0123456789abcdef", c|0x20))
					}
					units = append(units, uint16(r))
					i += 6
				} else {
					units = append(units, uint16(s[i+1])) // some ASCII char
					i += 2
				}
				continue
			}
			r, n := utf8.DecodeRuneInString(s[i:])
			units = append(units, utf16.Encode([]rune{r})...)
			i += n
		}
		for k := 0; k < len(units); k++ {
			u := rune(units[k])
			switch {
			case u >= 0xD800 && u < 0xDC00 && k+1 < len(units) && units[k+1] >= 0xDC00 && units[k+1] < 0xE000:
				k++
			case u >= 0xD800 && u < 0xE000:
				paired = false
			case u == utf8.RuneError:
				fffd++
			}
		}
	}
	return paired, fffd
}

// countFFFD counts U+FFFD in every string token (keys too) encoding/json
// reads from the valid JSON text b.
func countFFFD(t *testing.T, b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // a number too big for a float64 is still valid JSON
	n := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := tok.(string); ok {
			n += strings.Count(s, "\uFFFD")
		}
	}
}

// FuzzCheck: Check never panics; on valid JSON that is UTF-8 it refuses
// exactly what the reference decoder finds unpaired, and what it accepts
// encoding/json decodes without a U+FFFD the text does not spell (two
// texts with different unpaired surrogates can no longer decode alike).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{"id":"\ud800k"}`, `{"id":"\udbffk"}`, `"\ud83d\ude00"`, `"\\ud800"`, `"\\\ud800"`,
		`{"\uDC00":["\uD800\uDC00",1]}`, "\"\uFFFD\\ufffd\"", `"\ud800\u0041"`, "\"\xff\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := Check(b)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Offset < 0 || e.Offset >= len(b) {
				t.Fatalf("Check(%q) = %v: not an *Error inside b", b, err)
			}
		}
		if !json.Valid(b) {
			return
		}
		if !utf8.Valid(b) {
			if err == nil {
				t.Fatalf("Check(%q) accepted invalid UTF-8", b)
			}
			return
		}
		paired, want := decodeStrings(b)
		if paired != (err == nil) {
			t.Fatalf("Check(%q) = %v; the reference says paired = %v", b, err, paired)
		}
		if err != nil {
			return
		}
		if got := countFFFD(t, b); got != want {
			t.Fatalf("%q decodes with %d U+FFFD, the text spells %d", b, got, want)
		}
	})
}
