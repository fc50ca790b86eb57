package joins_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joinery/joinery/replay"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output blocks of joins/testdata/*.txt")

// TestJoinGolden replays the golden scripts of testdata/*.txt (etcd-io/raft
// interaction-test style) and compares each case's output with its
// expected block. A file holds one or more cases, each three sections:
//
//	-- spec --      the replay.Spec, YAML
//	-- script --    the replay script, one JSON object per line
//	-- output --    what replay.Run writes, then "# summary {…}"
//
// Lines before the first section are free comments. With -rewrite the
// output sections are regenerated; inspect the diff before committing.
//
// Each case also runs a metamorphic variant with {"snapshot":true} after
// every script line, which must give the same outputs (ids, primary keys
// and positions aside, since positions are line numbers).
func TestJoinGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			g, err := parseGolden(string(b))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			changed := false
			for i := range g.cases {
				c := &g.cases[i]
				got := replayCase(t, c.spec, c.script)
				checkSnapshotsChangeNothing(t, c, got)
				if got != c.output {
					if *rewrite {
						c.output, changed = got, true
						continue
					}
					t.Errorf("%s case %d (line %d): output differs (go test ./joins/ -run TestJoinGolden -rewrite)\n--- want\n%s--- got\n%s",
						path, i+1, c.line, c.output, got)
				}
			}
			if changed {
				if err := os.WriteFile(path, []byte(g.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("rewrote %s", path)
			}
		})
	}
}

// goldenFile is a parsed golden file.
type goldenFile struct {
	header string
	cases  []goldenCase
}

type goldenCase struct {
	line                 int // line of the case's spec header
	spec, script, output string
}

const (
	secSpec   = "-- spec --"
	secScript = "-- script --"
	secOutput = "-- output --"
)

// parseGolden splits a golden file into its cases. Section bodies keep
// their trailing newline.
func parseGolden(s string) (*goldenFile, error) {
	g := &goldenFile{}
	lines := strings.SplitAfter(s, "\n")
	var cur *goldenCase
	var body *string
	want := secSpec
	for i, l := range lines {
		if l == "" {
			continue
		}
		trim := strings.TrimRight(l, "\n")
		switch trim {
		case secSpec, secScript, secOutput:
			if trim != want {
				return nil, fmt.Errorf("line %d: %q out of order (want %q)", i+1, trim, want)
			}
			switch trim {
			case secSpec:
				g.cases = append(g.cases, goldenCase{line: i + 1})
				cur = &g.cases[len(g.cases)-1]
				body, want = &cur.spec, secScript
			case secScript:
				body, want = &cur.script, secOutput
			case secOutput:
				body, want = &cur.output, secSpec
			}
			continue
		}
		if !strings.HasSuffix(l, "\n") {
			l += "\n"
		}
		if body == nil {
			g.header += l
		} else {
			*body += l
		}
	}
	if len(g.cases) == 0 || want != secSpec {
		return nil, fmt.Errorf("want one or more complete spec/script/output cases")
	}
	return g, nil
}

func (g *goldenFile) String() string {
	var b strings.Builder
	b.WriteString(g.header)
	for _, c := range g.cases {
		b.WriteString(secSpec + "\n" + c.spec + secScript + "\n" + c.script + secOutput + "\n" + c.output)
	}
	return b.String()
}

// replayCase runs one case and returns its output block: replay's lines,
// then the summary. A bad spec or script is reported as the output, so a
// golden file may also pin an error.
func replayCase(t *testing.T, spec, script string) string {
	t.Helper()
	s, err := replay.ParseSpec([]byte(spec))
	if err != nil {
		return "# error " + strings.ReplaceAll(err.Error(), "\n", "\n# error ") + "\n"
	}
	var out bytes.Buffer
	sum, err := replay.Run(s, strings.NewReader(script), &out)
	if err != nil {
		out.WriteString("# error " + strings.ReplaceAll(err.Error(), "\n", "\n# error ") + "\n")
	}
	js, _ := json.Marshal(sum)
	out.WriteString("# summary " + string(js) + "\n")
	return out.String()
}

// checkSnapshotsChangeNothing replays c with a snapshot line after every
// script line and compares the outputs with got, ignoring ids, primary keys
// and positions (they derive from line numbers, which the extra lines move).
func checkSnapshotsChangeNothing(t *testing.T, c *goldenCase, got string) {
	t.Helper()
	var b strings.Builder
	for _, l := range strings.SplitAfter(c.script, "\n") {
		if l != "" {
			b.WriteString(strings.TrimRight(l, "\n") + "\n" + `{"snapshot":true}` + "\n")
		}
	}
	again := replayCase(t, c.spec, b.String())
	if w, g := normalize(t, got), normalize(t, again); w != g {
		t.Errorf("case at line %d: snapshots after every line change the output\n--- without\n%s--- with\n%s", c.line, w, g)
	}
}

// normalize drops the id, pk and pos fields and the summary from an output
// block.
func normalize(t *testing.T, block string) string {
	t.Helper()
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
		if strings.HasPrefix(l, "# summary ") || strings.HasPrefix(l, "# error ") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("output line %q: %v", l, err)
		}
		delete(m, "id")
		delete(m, "pk")
		if late, ok := m["late"].(map[string]any); ok {
			delete(late, "pos")
		}
		js, _ := json.Marshal(m)
		b.Write(js)
		b.WriteByte('\n')
	}
	return b.String()
}
