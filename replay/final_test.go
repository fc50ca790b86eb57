package replay_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/joinery/joinery/replay"
)

// TestReplayFinalRows checks the examples whose reference test compares
// only the final rows of a retract sink (Flink's JoinITCase): each
// examples/replay/<case>/final.txt holds a header "# leftcol,rightcol" and
// the reference's rows, sorted, as "left value,right value" ("null" for a
// padded side). The case's changelog must apply strictly (a retraction
// only of a row there) and leave exactly those rows.
func TestReplayFinalRows(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "examples", "replay", "*", "final.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no final.txt: %v", err)
	}
	for _, path := range files {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			cols := strings.Split(strings.TrimPrefix(lines[0], "# "), ",")
			want := lines[1:]
			jb, in := loadExample(t, dir)
			var out bytes.Buffer
			if _, err := replay.RunEvents(jb, bytes.NewReader(in), &out, replay.Options{Ops: replay.OpsAlways}); err != nil {
				t.Fatal(err)
			}
			table := map[string]int{} // result (its two rows' JSON) -> count
			for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var o struct {
					Left, Right json.RawMessage
					Op          string
				}
				if err := json.Unmarshal([]byte(l), &o); err != nil {
					t.Fatal(err)
				}
				k := string(o.Left) + "|" + string(o.Right)
				switch o.Op {
				case "+I", "+U":
					table[k]++
				default:
					if table[k] == 0 {
						t.Fatalf("%s retracts a row it never emitted", l)
					}
					table[k]--
				}
			}
			var got []string
			for k, n := range table {
				l, r, _ := strings.Cut(k, "|")
				for range n {
					got = append(got, column(t, l, cols[0])+","+column(t, r, cols[1]))
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("final rows\n%s\nwant (the reference's)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// column is row's (JSON, null when padded) value of col as text.
func column(t *testing.T, row, col string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(row), &m); err != nil {
		t.Fatal(err)
	}
	if m == nil {
		return "null"
	}
	return fmt.Sprint(m[col])
}
