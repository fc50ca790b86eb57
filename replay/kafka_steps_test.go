package replay_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joinery/joinery/replay"
)

// kafkaSteps gives, for the ref-kstreams versioned-table cases, the records
// Kafka Streams' test expects after each of its inputs, in order: element i
// is input i (the i-th side line of input.jsonl, with the watermark lines
// after it), as "left+right@ts" separated by spaces ("" for none). The
// tests check after each step (checkAndClearProcessResult, or the output
// topic after every pipeInput); expected.jsonl keeps only the order, this
// keeps the step: a record released one input early or late fails here.
var kafkaSteps = map[string][]string{
	// KStreamKTableJoinTest.shouldDelayJoinByGracePeriod.
	"ref-kstreams-kstream-ktable-versioned-delay": {
		"", "", "", "", // pushToTableNonRandom(4, "Y"): EMPTY
		"", "", "X0+Y0@0", "X1+Y1@1", // pushToStream(4, "X")
		"", "", "", "", // pushToTableNonRandom(4, "YY"): EMPTY
		"X0+YY0@0", "X1+YY1@1", "", "", // pushToStream(4, "X")
		"X2+YY2@2 X2+YY2@2 X3+YY3@3 X3+YY3@3", // pipeInput(5, "test", 7)
		"", "", "", "",                        // pushToTableNonRandom(4, "YYY"): EMPTY
	},
	// KStreamKTableJoinTest.shouldHandleLateJoinsWithGracePeriod.
	"ref-kstreams-kstream-ktable-versioned-late": {
		"", "", "", "",
		"", "", "X0+Y0@0", "X1+Y1@1",
		"X0+Y0@0",
	},
	// StreamTableJoinWithGraceIntegrationTest.testLeftWithVersionedStore.
	"ref-kstreams-kstream-ktable-versioned-left": {
		"", "", "", "", "A+null@3", "", "", "", "B+a@5", "", "", "",
		"", "", "D+b@6", "", "", "", "C+null@9", "", "", "F+a@4", "",
	},
	// StreamTableJoinWithGraceIntegrationTest.testInnerWithVersionedStore.
	"ref-kstreams-kstream-ktable-versioned-inner": {
		"", "", "", "", "", "", "", "", "B+a@5", "", "", "",
		"", "", "D+b@6", "", "", "", "", "", "", "F+a@4", "",
	},
	// StreamTableJoinIntegrationTest.testLeftWithVersionedStore (no grace).
	"ref-kstreams-kstream-ktable-versioned-nograce-left": {
		"", "", "A+null@3", "", "B+a@5", "", "", "", "C+null@9", "", "", "",
		"", "", "D+b@6", "", "", "", "E+e@15", "", "", "F+a@4", "",
	},
	// StreamTableJoinIntegrationTest.testInnerWithVersionedStore (no grace).
	"ref-kstreams-kstream-ktable-versioned-nograce-inner": {
		"", "", "", "", "B+a@5", "", "", "", "", "", "", "",
		"", "", "D+b@6", "", "", "", "E+e@15", "", "", "F+a@4", "",
	},
}

// TestReplayKafkaSteps runs each kafkaSteps case one input at a time
// (every prefix of input.jsonl that ends before the next side line, with
// end_of_input: hold) and compares the outputs each input adds with the
// Kafka test's records for it.
func TestReplayKafkaSteps(t *testing.T) {
	for name, want := range kafkaSteps {
		t.Run(name, func(t *testing.T) {
			jb, in := loadExample(t, filepath.Join("..", "examples", "replay", name))
			ls := strings.SplitAfter(strings.TrimSuffix(string(in), "\n"), "\n")
			var starts []int // the side lines: one input each
			for i, l := range ls {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("line %d: %v", i+1, err)
				}
				if _, ok := m["side"]; ok {
					starts = append(starts, i)
				}
			}
			if len(starts) == 0 {
				t.Fatal("no inputs")
			}
			ends := append(append([]int(nil), starts[1:]...), len(ls)) // input i runs to the next one
			if len(ends) != len(want) {
				t.Fatalf("%d inputs in input.jsonl, %d steps in kafkaSteps", len(ends), len(want))
			}
			seen := 0
			for i, end := range ends {
				var out bytes.Buffer
				if _, err := replay.RunEvents(jb, strings.NewReader(strings.Join(ls[:end], "")), &out, replay.Options{EndOfInput: replay.EndHold}); err != nil {
					t.Fatal(err)
				}
				outs := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
				if out.Len() == 0 {
					outs = nil
				}
				if len(outs) < seen {
					t.Fatalf("input %d: %d outputs, %d before", i+1, len(outs), seen)
				}
				var got []string
				for _, o := range outs[seen:] {
					got = append(got, pairText(t, o))
				}
				seen = len(outs)
				if strings.Join(got, " ") != want[i] {
					t.Errorf("input %d (%s): got %q, the Kafka test expects %q", i+1, strings.TrimSpace(ls[end-1]), strings.Join(got, " "), want[i])
				}
			}
		})
	}
}

// pairText writes an output line {"left":L,"right":R,"ts":T} as "L+R@T",
// as Kafka's TOSTRING_JOINER and the integration test's joiner write it.
func pairText(t *testing.T, line string) string {
	t.Helper()
	var o struct {
		Left, Right any
		Ts          any
	}
	if err := json.Unmarshal([]byte(line), &o); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return fmt.Sprintf("%v+%v@%v", orNull(o.Left), orNull(o.Right), o.Ts)
}

func orNull(v any) any {
	if v == nil {
		return "null"
	}
	return v
}
