package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/record"
)

// summaryRow is one scenario trial's outcome, printed in a table at the end
// of the package run (TestMain) and written as JSON to CHAOS_OUT when set.
type summaryRow struct {
	Scenario string `json:"scenario"`
	Trial    int    `json:"trial"`  // 1-based
	Trials   int    `json:"trials"` // trials of this scenario in this run
	EventsIn int    `json:"events_in"`
	Outputs  int    `json:"output_lines"`
	Equal    bool   `json:"final_state_equal"`
	// Lost counts expected rows missing or wrong in the final table.
	Lost int `json:"outputs_lost"`
	// DupIDs counts rows written twice under different ids: an insert (+I
	// or +U) of a primary key the table already holds with the same row,
	// replaying first lines per id (see dupOutputs).
	DupIDs int `json:"duplicate_outputs_differing_ids"`
	// Fenced counts "key write fenced" lines in all the nodes' logs.
	Fenced int `json:"fenced_writes_refused"`
	// Recovery is the time from the (last) fault until the output file grew
	// again, by polling every 5 ms; -1 without a fault or when it never grew.
	RecoveryMS int64 `json:"recovery_ms"`
	// MaxStallMS is the longest time, from a fault until the reading node
	// finished, that the output stood still (a gap closed by new output;
	// the idle tail after the input ended does not count). Outputs are
	// written in batch order, so a key stuck on a dead node stalls all
	// output behind it: this is the fault's real recovery time, where
	// Recovery may be a batch of unaffected keys. -1 without a fault.
	MaxStallMS int64 `json:"max_stall_ms"`
}

var summary struct {
	sync.Mutex
	rows []summaryRow
}

func record1(r summaryRow) {
	summary.Lock()
	defer summary.Unlock()
	summary.rows = append(summary.rows, r)
}

// printSummary prints the rows as a table on w and, when CHAOS_OUT names a
// file, writes them there as JSON.
func printSummary(w io.Writer) error {
	summary.Lock()
	defer summary.Unlock()
	if len(summary.rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%-34s %7s %9s %8s %6s %5s %7s %7s %11s %11s\n", "scenario", "trial", "events in", "outputs", "equal", "lost", "dup-ids", "fenced", "recovery", "max stall")
	str := func(v int64) string {
		if v < 0 {
			return "-"
		}
		return fmt.Sprint(time.Duration(v) * time.Millisecond)
	}
	for _, r := range summary.rows {
		eq := "no"
		if r.Equal {
			eq = "yes"
		}
		fmt.Fprintf(w, "%-34s %7s %9d %8d %6s %5d %7d %7d %11s %11s\n", r.Scenario, fmt.Sprintf("%d/%d", r.Trial, r.Trials), r.EventsIn, r.Outputs, eq, r.Lost, r.DupIDs, r.Fenced, str(r.RecoveryMS), str(r.MaxStallMS))
	}
	if path := os.Getenv("CHAOS_OUT"); path != "" {
		b, err := json.MarshalIndent(summary.rows, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(path, append(b, '\n'), 0o644)
	}
	return nil
}

// recovery watches an output file from the moment of a fault, polling its
// size every 5 ms: done returns how long until it first grew (-1 if it
// never did before done was called) and the longest standstill from the
// fault on that new output ended.
type recovery struct {
	stop chan struct{}
	res  chan recoveryTimes
	once sync.Once
	d    recoveryTimes
}

// recoveryTimes: first, the time until the output first grew; stall, the
// longest standstill, which ended stallEnd after the watch began.
type recoveryTimes struct{ first, stall, stallEnd time.Duration }

// ms is d in milliseconds, -1 for "none" (a negative d).
func ms(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func watchRecovery(paths ...string) *recovery {
	rc := &recovery{stop: make(chan struct{}), res: make(chan recoveryTimes, 1)}
	sizes := func() int64 {
		n := int64(0)
		for _, p := range paths {
			n += fileSize(p)
		}
		return n
	}
	start, size := time.Now(), sizes()
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		r := recoveryTimes{first: -1, stall: -1, stallEnd: -1}
		last := start
		for {
			select {
			case <-rc.stop:
				rc.res <- r
				return
			case now := <-tick.C:
				if n := sizes(); n > size {
					size = n
					if r.first < 0 {
						r.first = now.Sub(start)
					}
					if d := now.Sub(last); d > r.stall {
						r.stall, r.stallEnd = d, now.Sub(start)
					}
					last = now
				}
			}
		}
	}()
	return rc
}

func (rc *recovery) done() recoveryTimes {
	if rc == nil {
		return recoveryTimes{-1, -1, -1}
	}
	rc.once.Do(func() {
		close(rc.stop)
		rc.d = <-rc.res
	})
	return rc.d
}

// dupOutputs replays a changelog keeping the first line per id, like table,
// without failing: it counts inserts (+I, +U) of a primary key already held
// with the same row — one row written twice under different ids.
func dupOutputs(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	rows := map[string]record.Row{}
	seen := map[string]bool{}
	dups := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		o, err := changelog.DecodeChangelog(sc.Bytes())
		if err != nil || seen[o.ID] {
			continue
		}
		seen[o.ID] = true
		switch o.Kind {
		case record.Insert, record.UpdateAfter:
			if old, ok := rows[o.PK]; ok && reflect.DeepEqual(old, o.Row) {
				dups++
			}
			rows[o.PK] = o.Row
		default:
			delete(rows, o.PK)
		}
	}
	return dups
}

// fencedWrites counts "key write fenced" lines in the node logs of dir.
func fencedWrites(dir string) int {
	logs, _ := filepath.Glob(filepath.Join(dir, "n*.log"))
	n := 0
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		n += bytes.Count(b, []byte("key write fenced"))
	}
	return n
}

// rowsLost counts the expected rows missing or wrong in got.
func rowsLost(got, want map[string]string) int {
	n := 0
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			n++
		}
	}
	return n
}
