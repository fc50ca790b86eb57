package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/joinery/joinery/record"
)

// LineError is a script line Run (or an input line RunEvents) could not
// apply. Line is 1-based.
type LineError struct {
	Line int
	Err  error
	// Input is what the line belongs to: "script" (Run; the default when
	// empty) or "input" (RunEvents).
	Input string
}

func (e *LineError) Error() string {
	in := e.Input
	if in == "" {
		in = "script"
	}
	return fmt.Sprintf("replay: %s line %d: %v", in, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// stepKind is what a script line asks for.
type stepKind int

const (
	stepSkip      stepKind = iota // a blank line or a comment
	stepInput                     // a row or a change of one side
	stepWatermark                 // advance the watermark
	stepSnapshot                  // snapshot and restore every key
)

// step is one parsed script line.
type step struct {
	kind stepKind
	side string
	raw  []byte // stepInput of a cdc join: the whole line, a Debezium envelope
	row  record.Row
	del  bool // stepInput of an event-time join: op "d", a version delete
	wm   int64
}

// parseLine parses one script line (without its newline). cdc selects the
// input line form: a Debezium envelope with "side" (cdc) or
// {"side","row"[,"op"]} (event-time joins).
func parseLine(b []byte, cdc bool) (step, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return step{kind: stepSkip}, nil
	}
	var obj map[string]json.RawMessage
	if err := decodeStrict(b, &obj); err != nil {
		return step{}, err
	}
	if obj == nil {
		return step{}, errors.New("want a JSON object, got null")
	}
	only := func(name string) error {
		if len(obj) != 1 {
			for k := range obj {
				if k != name {
					return fmt.Errorf("a %q line takes no other field, got %q", name, k)
				}
			}
		}
		return nil
	}
	switch {
	case obj["comment"] != nil:
		if err := only("comment"); err != nil {
			return step{}, err
		}
		return step{kind: stepSkip}, nil
	case obj["watermark"] != nil:
		if err := only("watermark"); err != nil {
			return step{}, err
		}
		wm, err := parseTime(obj["watermark"])
		if err != nil {
			return step{}, fmt.Errorf("watermark: %v", err)
		}
		return step{kind: stepWatermark, wm: wm}, nil
	case obj["snapshot"] != nil:
		if err := only("snapshot"); err != nil {
			return step{}, err
		}
		if string(obj["snapshot"]) != "true" {
			return step{}, errors.New(`snapshot: want true`)
		}
		return step{kind: stepSnapshot}, nil
	case obj["side"] != nil:
	default:
		return step{}, errors.New(`want one of "side", "watermark", "snapshot" or "comment"`)
	}
	st := step{kind: stepInput}
	if err := json.Unmarshal(obj["side"], &st.side); err != nil {
		return step{}, errors.New("side: want a string")
	}
	if cdc {
		st.raw = b
		return st, nil
	}
	for k := range obj {
		if k != "side" && k != "row" && k != "op" {
			return step{}, fmt.Errorf("unknown field %q (an event-time input line holds side, row and op)", k)
		}
	}
	if raw, ok := obj["op"]; ok {
		var op string
		if err := json.Unmarshal(raw, &op); err != nil || op != "d" {
			return step{}, fmt.Errorf(`op: want "d" (a version delete), got %s`, raw)
		}
		st.del = true
	}
	raw, ok := obj["row"]
	if !ok {
		return step{}, errors.New("row: missing")
	}
	if err := decodeStrict(raw, &st.row); err != nil || st.row == nil {
		return step{}, errors.New("row: want a JSON object")
	}
	return st, nil
}

// decodeStrict decodes one JSON value (numbers as json.Number) and refuses
// trailing data.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// parseTime reads an event time: an integer (ms) or an RFC 3339 string.
func parseTime(raw json.RawMessage) (int64, error) {
	var v any
	if err := decodeStrict(raw, &v); err != nil {
		return 0, err
	}
	return timeOf(v)
}

func timeOf(v any) (int64, error) {
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		if err != nil {
			return 0, fmt.Errorf("%s is not an integer number of ms", x)
		}
		return n, nil
	case string:
		t, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return 0, fmt.Errorf("%q is not an RFC 3339 time", x)
		}
		return t.UnixMilli(), nil
	case nil:
		return 0, errors.New("null is not a time")
	}
	return 0, fmt.Errorf("a JSON %T is not a time (want ms or RFC 3339)", v)
}
