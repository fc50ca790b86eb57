package bearer

import "testing"

func TestParse(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Bearer s3cret", "s3cret"},
		{"bearer s3cret", "s3cret"},
		{"BEARER s3cret", "s3cret"},
		{"BeArEr s3cret", "s3cret"},
		{"Bearer   s3cret  ", "s3cret"},
		{"  Bearer s3cret", "s3cret"},
		{"Bearer", ""},
		{"Bearer ", ""},
		{"s3cret", ""}, // a bare token is not the Bearer scheme
		{"Basic s3cret", ""},
		{"Bearers s3cret", ""},
		{"", ""},
	} {
		if got := Parse(c.in); got != c.want {
			t.Errorf("Parse(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
