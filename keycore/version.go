package keycore

import (
	"strconv"
	"strings"
)

// A versioned side's row position (Core.admit) is its version: "ts/",
// the change's source time in milliseconds as 20 digits (a negative time
// counts as 0), then "/" and the Debezium source position when the change
// has one. Versions compare by time first, then by that position.
const versionPrefix = "ts/"

// versionPos is the position of a versioned side's change at time ts and
// Debezium source position pos ("" without one).
func versionPos(ts int64, pos string) string {
	b := make([]byte, 0, len(versionPrefix)+20+1+len(pos))
	b = append(b, versionPrefix...)
	d := strconv.AppendInt(nil, max(ts, 0), 10)
	for range 20 - len(d) {
		b = append(b, '0')
	}
	b = append(b, d...)
	if pos != "" {
		b = append(append(b, '/'), pos...)
	}
	return string(b)
}

// parseVersion splits a versionPos position into its time and Debezium
// position; ok is false for a position of another form.
func parseVersion(s string) (ts int64, pos string, ok bool) {
	rest, ok := strings.CutPrefix(s, versionPrefix)
	if !ok || len(rest) < 20 {
		return 0, "", false
	}
	n, ok := fixedDigits(rest[:20], 20)
	if !ok || n > 1<<63-1 {
		return 0, "", false
	}
	rest = rest[20:]
	if rest != "" {
		if rest[0] != '/' {
			return 0, "", false
		}
		pos = rest[1:]
	}
	return int64(n), pos, true
}
