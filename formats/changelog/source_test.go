package changelog

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/joinery/joinery/internal/utf8json"
	"github.com/joinery/joinery/record"
)

func TestDecodeChange(t *testing.T) {
	pos := record.Position{Source: "s", Offset: 3}
	row := record.Row{"id": json.Number("7"), "company_id": json.Number("2")}
	cases := []struct {
		line     string
		op       record.Op
		before   bool // the row is the before image (else the after)
		wantFail bool
	}{
		{`{"id":"a","op":"+I","pk":[1,7],"row":{"id":7,"company_id":2}}`, record.OpCreate, false, false},
		{`{"id":"a","op":"+U","pk":[1,7],"row":{"id":7,"company_id":2}}`, record.OpUpdate, false, false},
		{`{"id":"a","op":"-U","pk":[1,7],"row":{"id":7,"company_id":2}}`, record.OpDelete, true, false},
		{`{"id":"a","op":"-D","pk":[1,7],"row":{"id":7,"company_id":2}}`, record.OpDelete, true, false},
		{`{"id":"a","op":"-D","pk":[1,7],"row":null}`, 0, false, true},
		{`{"id":"a","op":"+X","pk":[1,7],"row":{}}`, 0, false, true},
		{`not json`, 0, false, true},
		{`{"id":"a","op":"+I","row":{"id":7}}`, 0, false, true},
		{`{"id":"a","op":"+I","pk":[1],"row":{"id":7,"_pk":"x"}}`, 0, false, true},
	}
	for _, tc := range cases {
		c, err := DecodeChange([]byte(tc.line), pos)
		if tc.wantFail {
			if err == nil {
				t.Errorf("%s: decoded as %+v, want an error", tc.line, c)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		img := c.After
		if tc.before {
			img = c.Before
		}
		if c.Op != tc.op || c.Pos != pos || img["id"] != row["id"] || img["company_id"] != row["company_id"] || img[PKColumn] != "[1,7]" {
			t.Errorf("%s: got %+v", tc.line, c)
		}
		if tc.before && c.After != nil || !tc.before && c.Before != nil {
			t.Errorf("%s: both images set: %+v", tc.line, c)
		}
	}
}

// TestDecodeChangeBadUTF8: a line whose strings would decode with U+FFFD
// (an unpaired surrogate escape, a byte that is not UTF-8) is refused
// with an *utf8json.Error, in every field; a pair and an escaped
// backslash are kept as they are.
func TestDecodeChangeBadUTF8(t *testing.T) {
	for _, tc := range []struct {
		line string
		bad  bool
	}{
		{`{"id":"a","op":"+I","pk":["\ud800k"],"row":{"user":"x"}}`, true},
		{`{"id":"a","op":"+I","pk":[1],"row":{"user":"\udbffk"}}`, true},
		{`{"id":"a","op":"+I","pk":[1],"row":{"\udc00":1}}`, true},
		{`{"id":"\ud83d","op":"+I","pk":[1],"row":{"user":"x"}}`, true},
		{"{\"id\":\"a\",\"op\":\"+I\",\"pk\":[1],\"row\":{\"user\":\"\xff\"}}", true},
		{`{"id":"a","op":"+I","pk":[1],"row":{"user":"\ud83d\ude00","b":"\\ud800"}}`, false},
	} {
		_, err := DecodeChange([]byte(tc.line), record.Position{})
		var ue *utf8json.Error
		if tc.bad != errors.As(err, &ue) {
			t.Errorf("DecodeChange(%s) = %v, want a *utf8json.Error: %v", tc.line, err, tc.bad)
		}
		if !tc.bad && err != nil {
			t.Errorf("DecodeChange(%s) = %v", tc.line, err)
		}
		if _, _, _, err := DecodeUpsert([]byte(tc.line)); tc.bad != errors.As(err, &ue) {
			t.Errorf("DecodeUpsert(%s) = %v, want a *utf8json.Error: %v", tc.line, err, tc.bad)
		}
	}
}
