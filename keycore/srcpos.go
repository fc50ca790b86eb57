package keycore

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// A row's last Debezium source position (a part s:<id>) is stored
// compactly when it has one of the forms formats/debezium's
// SourcePosition makes with fixed-width decimals:
//
//	pg/<lsn, 20 digits>                         0xC2 0x01 uvarint(lsn)
//	mongo/<ts_ms, 20 digits>/<ord, 10 digits>   0xC2 0x02 uvarint(ts_ms) uvarint(ord)
//	mysql/<file>/<pos, 20>/<row, 10>            0xC2 0x03 uvarint(len) file uvarint(pos) uvarint(row)
//	ts/<ms, 20 digits>                          0xC2 0x04 uvarint(ms)   (a versioned side's version)
//
// and as its text otherwise (after 0xC2 0x00 in the one case it starts
// with 0xC2 itself; SourcePosition's always start with a letter), so the
// first byte tells the forms apart; decoding gives back the exact text, so
// positions compare as before. "pg/00000000000023456789" is 22 bytes of
// text and 5 stored.
const srcTag = 0xC2

// appendSrcPos appends pos's stored form.
func appendSrcPos(b []byte, pos string) []byte {
	if rest, ok := strings.CutPrefix(pos, "pg/"); ok {
		if n, ok := fixedDigits(rest, 20); ok {
			return binary.AppendUvarint(append(b, srcTag, 1), n)
		}
	}
	if rest, ok := strings.CutPrefix(pos, versionPrefix); ok {
		if n, ok := fixedDigits(rest, 20); ok {
			return binary.AppendUvarint(append(b, srcTag, 4), n)
		}
	}
	if rest, ok := strings.CutPrefix(pos, "mongo/"); ok && len(rest) == 31 && rest[20] == '/' {
		ts, ok1 := fixedDigits(rest[:20], 20)
		ord, ok2 := fixedDigits(rest[21:], 10)
		if ok1 && ok2 {
			return binary.AppendUvarint(binary.AppendUvarint(append(b, srcTag, 2), ts), ord)
		}
	}
	if rest, ok := strings.CutPrefix(pos, "mysql/"); ok && len(rest) >= 33 && rest[len(rest)-11] == '/' && rest[len(rest)-32] == '/' {
		file := rest[:len(rest)-32]
		p, ok1 := fixedDigits(rest[len(rest)-31:len(rest)-11], 20)
		row, ok2 := fixedDigits(rest[len(rest)-10:], 10)
		if ok1 && ok2 {
			b = binary.AppendUvarint(append(b, srcTag, 3), uint64(len(file)))
			b = append(b, file...)
			return binary.AppendUvarint(binary.AppendUvarint(b, p), row)
		}
	}
	if len(pos) > 0 && pos[0] == srcTag {
		b = append(b, srcTag, 0) // text that would read as a compact form
	}
	return append(b, pos...)
}

// fixedDigits parses s, exactly width decimal digits, as formatted by
// %0<width>d of a uint64.
func fixedDigits(s string, width int) (uint64, bool) {
	if len(s) != width {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// srcPos decodes a stored position (appendSrcPos), reporting false for a
// compact form it cannot read.
func srcPos(b []byte) (string, bool) {
	if len(b) == 0 || b[0] != srcTag {
		return string(b), true
	}
	if len(b) < 2 {
		return "", false
	}
	r := b[2:]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(r)
		if n <= 0 {
			return 0, false
		}
		r = r[n:]
		return v, true
	}
	pad := func(dst []byte, v uint64, width int) []byte {
		s := strconv.AppendUint(nil, v, 10)
		for range width - len(s) {
			dst = append(dst, '0')
		}
		return append(dst, s...)
	}
	var out []byte
	switch b[1] {
	case 0:
		return string(r), true
	case 1:
		lsn, ok := next()
		if !ok || len(r) > 0 {
			return "", false
		}
		out = pad(append(out, "pg/"...), lsn, 20)
	case 2:
		ts, ok1 := next()
		ord, ok2 := next()
		if !ok1 || !ok2 || len(r) > 0 || ord > 9_999_999_999 {
			return "", false
		}
		out = pad(append(pad(append(out, "mongo/"...), ts, 20), '/'), ord, 10)
	case 3:
		n, ok := next()
		if !ok || n > uint64(len(r)) {
			return "", false
		}
		file := r[:n]
		r = r[n:]
		p, ok1 := next()
		row, ok2 := next()
		if !ok1 || !ok2 || len(r) > 0 || row > 9_999_999_999 {
			return "", false
		}
		out = append(append(append(out, "mysql/"...), file...), '/')
		out = pad(append(pad(out, p, 20), '/'), row, 10)
	case 4:
		ms, ok := next()
		if !ok || len(r) > 0 {
			return "", false
		}
		out = pad(append(out, versionPrefix...), ms, 20)
	default:
		return "", false
	}
	return string(out), true
}

// pgPos is the Postgres position of lsn, as SourcePosition writes it.
func pgPos(lsn uint64) string {
	var b [23]byte
	copy(b[:], "pg/00000000000000000000")
	d := strconv.AppendUint(b[:0:0], lsn, 10)
	copy(b[23-len(d):], d)
	return string(b[:])
}
