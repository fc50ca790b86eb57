package debezium

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
)

// TestSourcePositionPadding: positions are zero-padded as fmt's %020d and
// %010d pad them, values wider than the padding included.
func TestSourcePositionPadding(t *testing.T) {
	for _, v := range []uint64{0, 7, 1234567890, 12345678901, 1<<63 + 5, 1<<64 - 1} {
		n := json.Number(strconv.FormatUint(v, 10))
		for _, tc := range []struct {
			src  map[string]any
			want string
		}{
			{map[string]any{"lsn": n}, fmt.Sprintf("pg/%020d", v)},
			{map[string]any{"file": "bin.1", "pos": n, "row": n}, fmt.Sprintf("mysql/%s/%020d/%010d", "bin.1", v, v)},
			{map[string]any{"file": "bin.1", "pos": n}, fmt.Sprintf("mysql/%s/%020d/%010d", "bin.1", v, 0)},
			{map[string]any{"commit_lsn": "c:1", "change_lsn": "c:2", "event_serial_no": n}, fmt.Sprintf("sqlserver/%s/%s/%010d", "c:1", "c:2", v)},
			{map[string]any{"commit_lsn": "c:1"}, fmt.Sprintf("sqlserver/%s/%s/%010d", "c:1", "", 0)},
			{map[string]any{"ts_ms": n, "ord": n}, fmt.Sprintf("mongo/%020d/%010d", v, v)},
		} {
			if got := SourcePosition(tc.src); got != tc.want {
				t.Errorf("SourcePosition(%v) = %q, want %q", tc.src, got, tc.want)
			}
		}
	}
}
