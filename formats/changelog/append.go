package changelog

import (
	"encoding/json"

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
	return jsonenc.AppendOutput(b, &o, compact(pk))
}

// compact returns valid JSON text without insignificant space, as
// encoding/json writes a json.RawMessage (raw itself when it has none).
func compact(raw []byte) []byte {
	for _, c := range raw {
		if c == ' ' || c == '\n' || c == '\t' || c == '\r' {
			out, err := json.Marshal(json.RawMessage(raw))
			if err != nil {
				return raw // cannot happen: raw was checked valid
			}
			return out
		}
	}
	return raw
}
