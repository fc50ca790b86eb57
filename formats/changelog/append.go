package changelog

import (
	"encoding/json"
	"strconv"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/record"
)

// appendChangelog appends o as a Changelog line — byte for byte what
// encoding/json (HTML escaping off) writes for changelogLine — without
// reflection: the sink encodes every output, and the reflecting encoder
// was 8% of a node's CPU on the cdc benchmark. pk must be valid JSON. ok is
// false when the row holds a value outside the fast path (anything but the
// types encoding/json decodes into: nil, bool, float64, string,
// json.Number, []any, map[string]any), and the caller encodes it the slow
// way.
func appendChangelog(b []byte, o record.Output, pk []byte) ([]byte, bool) {
	b = append(b, `{"id":`...)
	b = jsonenc.AppendString(b, o.ID)
	b = append(b, `,"op":"`...)
	b = append(b, o.Kind.String()...)
	b = append(b, `","pk":`...)
	b = appendCompact(b, pk)
	b = append(b, `,"row":`...)
	var ok bool
	if b, ok = jsonenc.AppendValue(b, map[string]any(o.Row)); !ok {
		return b, false
	}
	if o.Ts != 0 {
		b = append(b, `,"ts":`...)
		b = strconv.AppendInt(b, o.Ts, 10)
	}
	if o.Seq != 0 {
		b = append(b, `,"seq":`...)
		b = strconv.AppendUint(b, o.Seq, 10)
	}
	return append(b, '}'), true
}

// appendCompact appends valid JSON text without insignificant space, as
// encoding/json does for a json.RawMessage.
func appendCompact(b, raw []byte) []byte {
	for _, c := range raw {
		if c == ' ' || c == '\n' || c == '\t' || c == '\r' {
			return appendCompactSlow(b, raw)
		}
	}
	return append(b, raw...)
}

func appendCompactSlow(b, raw []byte) []byte {
	out, err := json.Marshal(json.RawMessage(raw))
	if err != nil {
		return append(b, raw...) // cannot happen: raw was checked valid
	}
	return append(b, out...)
}
