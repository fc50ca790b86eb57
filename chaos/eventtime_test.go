package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/internal/testutil"
)

// TestChaosWindowJoinKillActorNode runs a 10-second tumbling window join of
// two event streams on three nodes (n1 reads both, all host key actors;
// state, timers and the timer index in Redis) and kills -9 an actor node at
// a random moment: its keys' buffered windows reload elsewhere from Redis,
// their timers fire there, and the joined pairs equal a brute-force join.
//
// It found a real bug: a request without elements (a firing) replaced the
// in-flight record of an earlier unanswered request with elements, so a
// later request could overtake that one's retry after the failover and its
// elements arrived behind their window (late, dead-lettered). The dead
// letters are printed when pairs go missing.
func TestChaosWindowJoinKillActorNode(t *testing.T) {
	for trial := range trials(1) {
		seed := uint64(700 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, seed))
			dir := t.TempDir()
			redis := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
			type ev struct {
				K  string `json:"k"`
				Ts int64  `json:"ts"`
				V  string `json:"v"`
			}
			files := map[string]*os.File{}
			for _, name := range []string{"left.jsonl", "right.jsonl"} {
				f, err := os.Create(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				files[name] = f
			}
			var left, right []ev
			for i := range 30000 {
				e := ev{K: fmt.Sprint("k", r.IntN(60)), Ts: int64(i)*40 + int64(r.IntN(400)), V: fmt.Sprint("e", i)}
				name := "left.jsonl"
				if r.IntN(2) == 0 {
					left = append(left, e)
				} else {
					right, name = append(right, e), "right.jsonl"
				}
				b, _ := json.Marshal(e)
				files[name].Write(append(b, '\n'))
			}
			for _, f := range files {
				f.Close()
			}
			want := map[string]bool{}
			byKeyWin := map[string][]ev{}
			for _, l := range left {
				k := fmt.Sprint(l.K, "/", l.Ts/10000)
				byKeyWin[k] = append(byKeyWin[k], l)
			}
			for _, rr := range right {
				for _, l := range byKeyWin[fmt.Sprint(rr.K, "/", rr.Ts/10000)] {
					want[l.V+"|"+rr.V] = true
				}
			}
			ports := [3]int{testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t)}
			seedAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
			for i := range 3 {
				job := fmt.Sprintf(`name: windows
join:
  type: window
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}
  window: {type: tumbling, size: 10s}
  project: [{name: lv, from: l.v}, {name: rv, from: r.v}]
state: {store: redis, redis: {addr: %q}}
cluster: {node_name: n%d, gossip: "127.0.0.1:%d", remote: "127.0.0.1:0", seeds: [%q], profile: lan, request_timeout: 2s}
`, redis.Addr, i+1, ports[i], seedAddr)
				if i == 0 {
					job += `sources:
  - {name: ls, type: file, path: left.jsonl, side: left, rate: 3000, watermark: {max_out_of_orderness: 1s}}
  - {name: rs, type: file, path: right.jsonl, side: right, rate: 3000, watermark: {max_out_of_orderness: 1s}}
sinks: [{type: file, path: out.jsonl, format: changelog}]
dead_letter: dead.jsonl
`
				}
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("n%d.yaml", i+1)), []byte(job), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			n2 := startProc(t, dir, "n2", "n2.yaml")
			n3 := startProc(t, dir, "n3", "n3.yaml")
			n1 := startProc(t, dir, "n1", "n1.yaml")
			out := filepath.Join(dir, "out.jsonl")
			waitLines(t, out, 1+r.IntN(len(want)/2), time.Minute)
			rec := watchRecovery(out)
			t.Cleanup(func() { rec.done() })
			n2.kill()
			t.Logf("killed n2 with %d output lines written", lineCount(out))
			if err := n1.wait(3 * time.Minute); err != nil {
				logs, _ := os.ReadFile(filepath.Join(dir, "n1.log"))
				t.Fatalf("reading node: %v\n%s", err, tail(logs, 3000))
			}
			rt := rec.done()
			n3.term()
			got, lines, dups, dupIDs := pairs(t, out)
			missing, extra := 0, 0
			for p := range want {
				if !got[p] {
					missing++
				}
			}
			for p := range got {
				if !want[p] {
					extra++
				}
			}
			record1(summaryRow{Scenario: "WindowJoinKillActorNode", Trial: trial + 1, Trials: trials(1),
				EventsIn: 30000, Outputs: lines, Equal: missing+extra == 0, Lost: missing,
				DupIDs: dupIDs, Fenced: fencedWrites(dir), RecoveryMS: ms(rt.first), MaxStallMS: ms(rt.stall)})
			if missing+extra > 0 {
				dl, _ := os.ReadFile(filepath.Join(dir, "dead.jsonl"))
				t.Logf("dead letters (late elements explain missing pairs): %s", tail(dl, 2000))
				t.Errorf("window join after kill -9: %d pairs, want %d (%d missing, %d extra)", len(got), len(want), missing, extra)
			}
			t.Logf("%d pairs; changelog %d lines, %d re-sent", len(got), lines, dups)
		})
	}
}

// pairs reads a window join's changelog ({lv, rv} rows, insert-only) into
// the set of "lv|rv", keeping the first line of every output id; dupIDs
// counts pairs written again under a different id.
func pairs(t *testing.T, path string) (got map[string]bool, lines, dups, dupIDs int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got = map[string]bool{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines++
		o, err := changelog.DecodeChangelog(sc.Bytes())
		if err != nil {
			t.Fatalf("%s:%d: %v", path, lines, err)
		}
		if seen[o.ID] {
			dups++
			continue
		}
		seen[o.ID] = true
		p := fmt.Sprintf("%v|%v", o.Row["lv"], o.Row["rv"])
		if got[p] {
			dupIDs++
		}
		got[p] = true
	}
	return got, lines, dups, dupIDs
}
