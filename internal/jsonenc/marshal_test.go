package jsonenc

import (
	"math"
	"testing"
)

func TestMarshal(t *testing.T) {
	type s struct {
		A string `json:"a"`
		B []int  `json:"b,omitempty"`
	}
	for _, tc := range []struct {
		name   string
		prefix []byte
		v      any
		want   string
		err    bool
	}{
		{name: "html kept", v: map[string]any{"x": "<a href=\"y\">&</a>"}, want: `{"x":"<a href=\"y\">&</a>"}`},
		{name: "struct", v: s{A: "a>b"}, want: `{"a":"a>b"}`},
		{name: "no trailing newline", v: []int{1, 2}, want: `[1,2]`},
		{name: "appends", prefix: []byte{1, 'k'}, v: "v", want: "\x01k\"v\""},
		{name: "error keeps b", prefix: []byte("p"), v: math.NaN(), want: "p", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppendMarshal(tc.prefix, tc.v)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if string(got) != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if tc.prefix == nil {
				m, err := Marshal(tc.v)
				if string(m) != tc.want || (err != nil) != tc.err {
					t.Errorf("Marshal = %q, %v; want %q", m, err, tc.want)
				}
			}
		})
	}
}

func TestMarshalIndent(t *testing.T) {
	got, err := MarshalIndent(map[string]any{"a": "<&>", "b": 1}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"a\": \"<&>\",\n  \"b\": 1\n}"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
