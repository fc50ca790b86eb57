package jsonenc

import (
	"bytes"
	"encoding/json"
)

// Marshal encodes v as json.Marshal does, but with HTML escaping off (<, >
// and & stay as they are, as every line Joinery writes has them): the one
// place the json.Encoder-with-SetEscapeHTML(false) dance is done. It uses
// encoding/json (reflection) for any v; the Append functions are the fast
// path for decoded JSON values.
func Marshal(v any) ([]byte, error) { return AppendMarshal(nil, v) }

// AppendMarshal appends Marshal(v) to b. On error b is returned as it was.
func AppendMarshal(b []byte, v any) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return b, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// MarshalIndent is Marshal with json.MarshalIndent's prefix and indent.
func MarshalIndent(v any, prefix, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
