package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// The events input format (RunEvents), one JSON object per line in arrival
// order:
//
//	{"side":"left","key":K,"ts":T,"value":V}                      an element of an event-time join
//	{"side":"right","key":K,"ts":T,"value":V,"op":"+U"}          a version of a temporal join's versioned side (+I, +U; -U, -D end it)
//	{"side":"left","op":"c","before":{…},"after":{…},"ts":T}     a change of a cdc join (c, r, u, d or +I, -U, +U, -D)
//	{"watermark":W}                                              advance event time to W
//	{"snapshot":true}                                            snapshot and restore every key
//
// A "comment" field is ignored on any line; a line holding only a comment,
// and a blank line, is skipped.

// eventKind is what an events line asks for.
type eventKind int

const (
	evSkip      eventKind = iota // blank or comment only
	evInput                      // an element or a change of one side
	evWatermark                  // advance the watermark
	evSnapshot                   // snapshot and restore every key
)

// eventLine is one decoded events line. Which fields an input needs depends
// on the join (RunEvents checks): key and ts for an event-time join, op and
// before/after (or value) for a cdc join.
type eventLine struct {
	kind eventKind
	wm   int64

	side    string
	op      string // "" when absent
	key     string // the key's canonical JSON text (keyText); "" when absent
	null    bool   // the key is JSON null
	ts      int64  // event time, ms
	hasTs   bool   // ts was given and not null
	tsMs    int64  // a Debezium envelope's ts_ms (cdc joins' source time)
	hasTsMs bool
	value   json.RawMessage // compacted; nil when absent

	before, after json.RawMessage // compacted objects; nil when absent or null
}

// Fields an input line may hold. Debezium envelope fields that carry no
// meaning here are accepted and ignored, so captured change events can be
// replayed as they are.
var inputFields = map[string]bool{
	"side": true, "op": true, "key": true, "ts": true, "value": true, "before": true, "after": true,
	"ts_ms": true, "ts_us": true, "ts_ns": true, "source": true, "transaction": true,
}

// decodeEventLine decodes one events line (without its newline). It knows
// nothing of the join: every well-formed line decodes.
func decodeEventLine(b []byte) (eventLine, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return eventLine{kind: evSkip}, nil
	}
	var obj map[string]json.RawMessage
	if err := decodeStrict(b, &obj); err != nil {
		return eventLine{}, err
	}
	if obj == nil {
		return eventLine{}, errors.New("want a JSON object, got null")
	}
	delete(obj, "comment")
	only := func(name string) error {
		for k := range obj {
			if k != name {
				return fmt.Errorf("a %q line takes no other field, got %q", name, k)
			}
		}
		return nil
	}
	switch {
	case len(obj) == 0:
		return eventLine{kind: evSkip}, nil
	case obj["watermark"] != nil:
		if err := only("watermark"); err != nil {
			return eventLine{}, err
		}
		wm, err := parseTime(obj["watermark"])
		if err != nil {
			return eventLine{}, fmt.Errorf("watermark: %v", err)
		}
		return eventLine{kind: evWatermark, wm: wm}, nil
	case obj["snapshot"] != nil:
		if err := only("snapshot"); err != nil {
			return eventLine{}, err
		}
		if string(obj["snapshot"]) != "true" {
			return eventLine{}, errors.New("snapshot: want true")
		}
		return eventLine{kind: evSnapshot}, nil
	case obj["side"] == nil:
		return eventLine{}, errors.New(`want "side" (an input), "watermark" or "snapshot"`)
	}
	for k := range obj {
		if !inputFields[k] {
			return eventLine{}, fmt.Errorf("unknown field %q (an input line holds side, key, ts, value, op, before, after)", k)
		}
	}
	ev := eventLine{kind: evInput}
	if err := json.Unmarshal(obj["side"], &ev.side); err != nil {
		return eventLine{}, fmt.Errorf("side: want a string, got %s", obj["side"])
	}
	if raw, ok := obj["op"]; ok {
		if err := json.Unmarshal(raw, &ev.op); err != nil || ev.op == "" {
			return eventLine{}, fmt.Errorf("op: want a string, got %s", raw)
		}
	}
	if raw, ok := obj["key"]; ok {
		k, null, err := keyText(raw)
		if err != nil {
			return eventLine{}, fmt.Errorf("key: %v", err)
		}
		ev.key, ev.null = k, null
	}
	if raw, ok := obj["ts"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		ts, err := parseTime(raw)
		if err != nil {
			return eventLine{}, fmt.Errorf("ts: %v", err)
		}
		ev.ts, ev.hasTs = ts, true
	}
	if raw, ok := obj["ts_ms"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		ts, err := parseTime(raw)
		if err != nil {
			return eventLine{}, fmt.Errorf("ts_ms: %v", err)
		}
		ev.tsMs, ev.hasTsMs = ts, true
	}
	if raw, ok := obj["value"]; ok {
		ev.value = compact(raw)
	}
	for _, f := range []struct {
		name string
		dst  *json.RawMessage
	}{{"before", &ev.before}, {"after", &ev.after}} {
		raw, ok := obj[f.name]
		if !ok {
			continue
		}
		raw = compact(raw)
		switch {
		case bytes.Equal(raw, []byte("null")):
		case len(raw) > 0 && raw[0] == '{':
			*f.dst = raw
		default:
			return eventLine{}, fmt.Errorf("%s: want a JSON object or null, got %s", f.name, raw)
		}
	}
	return ev, nil
}

// compact returns raw without insignificant white space (raw is valid
// JSON: decodeStrict has checked the whole line).
func compact(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return buf.Bytes()
}

// keyText returns the canonical JSON text of a key, the form keys are
// compared in: a string is its JSON string ("a" and 1 and "1" are three
// keys), a number its shortest form (1, 1.0 and 1e0 are one key), a boolean
// true or false. null reports null; objects and arrays are refused.
func keyText(raw json.RawMessage) (k string, null bool, err error) {
	var v any
	if err := decodeStrict(raw, &v); err != nil {
		return "", false, err
	}
	switch x := v.(type) {
	case nil:
		return "", true, nil
	case string:
		b, err := marshal(x)
		return string(b), false, err
	case bool:
		return strconv.FormatBool(x), false, nil
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return strconv.FormatInt(n, 10), false, nil
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return "", false, fmt.Errorf("%s is out of range", x)
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return strconv.FormatInt(int64(f), 10), false, nil
		}
		return strconv.FormatFloat(f, 'g', -1, 64), false, nil
	}
	return "", false, fmt.Errorf("want a JSON scalar (string, number or boolean), got %s", compact(raw))
}
