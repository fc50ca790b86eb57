package transcript

import (
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []Block
		err  bool
	}{
		{name: "empty", in: "", want: nil},
		{name: "one", in: "cmd a\n----\nok\n", want: []Block{{Cmd: "cmd a", Want: "ok\n", Line: 1}}},
		{
			name: "comments and blank lines",
			in:   "# first\n\n# second\ncmd\n----\nline 1\nline 2\n\n\ncmd2\n----\n",
			want: []Block{{Comments: "# first\n# second\n", Cmd: "cmd", Want: "line 1\nline 2\n", Line: 4}, {Cmd: "cmd2", Line: 10}},
		},
		{name: "no separator", in: "cmd\nok\n", err: true},
		{name: "command at the end", in: "cmd", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
