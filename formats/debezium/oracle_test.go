package debezium

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/joinery/joinery/internal/utf8json"
	"github.com/joinery/joinery/record"
)

// stdDecodeEnvelope is DecodeEnvelope as it is written with encoding/json
// (json.Decoder with UseNumber into any, then utf8json.Check over the
// bytes): the oracle the fuzz tests compare the decoder with.
func stdDecodeEnvelope(b []byte, pos record.Position) (Envelope, error) {
	c, env, err := stdDecode(b, pos)
	return envelopeOf(c, env, err)
}

// stdDecode decodes b and returns the envelope object (nil when b is not one).
func stdDecode(b []byte, pos record.Position) (record.Change, map[string]any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return record.Change{}, nil, ErrTombstone
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return record.Change{}, nil, decodeErr(pos, ReasonNotJSON, "%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return record.Change{}, nil, decodeErr(pos, ReasonNotJSON, "trailing data after the JSON value")
	}
	if err := utf8json.Check(b); err != nil {
		return record.Change{}, nil, decodeErr(pos, ReasonBadUTF8, "%v", err)
	}
	if v == nil {
		return record.Change{}, nil, ErrTombstone
	}
	env, ok := v.(map[string]any)
	if !ok {
		return record.Change{}, nil, decodeErr(pos, ReasonNotObject, "value is a JSON %s", kind(v))
	}
	if p, wrapped := env["payload"]; wrapped {
		if _, hasOp := env["op"]; !hasOp {
			if p == nil {
				return record.Change{}, nil, ErrTombstone
			}
			if env, ok = p.(map[string]any); !ok {
				return record.Change{}, nil, decodeErr(pos, ReasonNotObject, "payload is a JSON %s", kind(p))
			}
		}
	}

	c, err := fromEnv(env, pos)
	return c, env, err
}

// stdDecodeObject is DecodeObject as encoding/json gives it: the oracle of
// the object decoder.
func stdDecodeObject(b []byte, pos record.Position) (record.Row, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, decodeErr(pos, ReasonNotJSON, "%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, decodeErr(pos, ReasonNotJSON, "trailing data after the JSON value")
	}
	if err := utf8json.Check(b); err != nil {
		return nil, decodeErr(pos, ReasonBadUTF8, "%v", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, decodeErr(pos, ReasonNotObject, "value is a JSON %s", kind(v))
	}
	return m, nil
}

// sameOutcome fails t unless the two decodings agree: equal envelopes
// (rows, op, ts_ms, position, table, source position), and the same
// sentinel error or the same DecodeError reason and position.
func sameOutcome(t *testing.T, in []byte, got any, gerr error, want any, werr error) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got  %#v (%v)\n want %#v (%v)", in, got, gerr, want, werr)
	}
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%q: error %v, want %v", in, gerr, werr)
	}
	if werr == nil {
		return
	}
	for _, s := range []error{ErrTombstone, ErrTruncate} {
		if errors.Is(werr, s) != errors.Is(gerr, s) {
			t.Fatalf("%q: error %v, want %v", in, gerr, werr)
		}
	}
	var gd, wd *DecodeError
	if errors.As(werr, &wd) != errors.As(gerr, &gd) {
		t.Fatalf("%q: error %v, want %v", in, gerr, werr)
	}
	if wd != nil && (gd.Reason != wd.Reason || gd.Pos != wd.Pos) {
		t.Fatalf("%q: error %v, want %v", in, gerr, werr)
	}
}
