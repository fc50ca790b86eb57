package bench

import (
	"bytes"
	"encoding/json"

	"github.com/joinery/joinery/record"
)

var tableTag = []byte(`"source":{"table":"`)

// tableOf returns the Debezium source.table of a bare envelope line as the
// generators write it ("" when absent). The engine's core loop and the
// baselines share it, so its cost is the same on both sides; the node finds
// the table with its own, slower, second JSON decode.
func tableOf(line []byte) string {
	i := bytes.LastIndex(line, tableTag)
	if i < 0 {
		return ""
	}
	rest := line[i+len(tableTag):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// num returns a numeric column as int64 (0 when absent or not a number).
func num(r record.Row, col string) int64 {
	n, _ := r[col].(json.Number)
	v, _ := n.Int64()
	return v
}

// str returns a string column ("" when absent).
func str(r record.Row, col string) string {
	s, _ := r[col].(string)
	return s
}

// pkText is the JSON text of a primary-key value as the changelog join
// writes it into an output PK.
func pkText(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case json.Number:
		return string(x)
	case string:
		b, _ := json.Marshal(x)
		return string(b)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func rowKey(r record.Row, col string) (string, bool) {
	if r == nil {
		return "", false
	}
	k, ok := record.KeyOf(r[col])
	return string(k), ok
}
