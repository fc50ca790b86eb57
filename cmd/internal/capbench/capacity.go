package capbench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/node"
)

// Config sizes a run.
type Config struct {
	// Changes is the number of Debezium changes after the snapshot (default
	// 200,000); the history has Changes/4 user ids and three times as many
	// domain ids, half of each in the snapshot.
	Changes int
	// Seed is cdcgen's seed (default 1).
	Seed uint64
	// Variants are the variants to run, by name (default: all of Variants).
	Variants []string
	// Dir holds the input files and the redis-servers' directories (default:
	// a temporary directory, removed at the end).
	Dir string
	// Log receives progress lines (default: none).
	Log io.Writer
}

// Variant is a shape of the rows.
type Variant struct {
	Name string
	// Pad is the number of extra string columns of cdcgen.PadBytes per row,
	// which the job never reads.
	Pad int
}

// Variants are the runs of a report, in order.
var Variants = []Variant{{Name: "narrow"}, {Name: "wide", Pad: 10}}

// jobYAML is the seed's query: users INNER JOIN domains on users.id =
// domains.user_id, returning user_id, firstname, lastname and domain_name.
const jobYAML = `join:
  type: cdc
  mode: inner
  left:  {name: users,   pk: id, join_on: id}
  right: {name: domains, pk: id, join_on: user_id}
  project:
    - {name: user_id,     from: users.id}
    - {name: firstname,   from: users.firstname}
    - {name: lastname,    from: users.lastname}
    - {name: domain_name, from: domains.domain_name}
`

// Run runs the variants one after another, each on a redis-server of its
// own, and returns the report. It fails when redis-server is not installed.
func Run(ctx context.Context, c Config) (*Report, error) {
	if c.Changes <= 0 {
		c.Changes = 200_000
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	var variants []Variant
	if len(c.Variants) == 0 {
		variants = Variants
	}
	for _, name := range c.Variants {
		i := variantIndex(name)
		if i < 0 {
			return nil, fmt.Errorf("capbench: unknown variant %q (narrow, wide)", name)
		}
		variants = append(variants, Variants[i])
	}
	if c.Dir == "" {
		d, err := os.MkdirTemp("", "joinery-capacity-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		c.Dir = d
	}
	users := max(1, c.Changes/4)
	rep := &Report{Changes: c.Changes, Seed: c.Seed, Users: users, Domains: 3 * users, Job: jobYAML, GoVersion: runtime.Version()}
	for _, v := range variants {
		res, err := runVariant(ctx, c, v, rep)
		if err != nil {
			return nil, fmt.Errorf("capbench: %s: %w", v.Name, err)
		}
		rep.Results = append(rep.Results, *res)
	}
	return rep, nil
}

func variantIndex(name string) int {
	for i, v := range Variants {
		if v.Name == name {
			return i
		}
	}
	return -1
}

// runVariant generates v's input, runs the node over it on a fresh
// redis-server and measures.
func runVariant(ctx context.Context, c Config, v Variant, rep *Report) (*Result, error) {
	dir := filepath.Join(c.Dir, v.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	res := &Result{Variant: v.Name, PadColumns: v.Pad}
	inPath := filepath.Join(dir, "changes.jsonl")
	t0 := time.Now()
	if err := generate(cdcgen.Config{Seed: c.Seed, Users: rep.Users, Domains: rep.Domains, Changes: c.Changes, Pad: v.Pad, LSN: true}, inPath, res); err != nil {
		return nil, err
	}
	fmt.Fprintf(c.Log, "capacity %s: %d changes generated in %.1f s: %d live join keys, %d rows\n",
		v.Name, res.Lines, time.Since(t0).Seconds(), res.JoinKeys, res.StoredRows)

	srv, err := testutil.LaunchRedis(testutil.RedisConfig{Dir: filepath.Join(dir, "redis"), LogName: "redis.log"})
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	addr := srv.Addr
	rc := newRedis(addr)
	defer rc.Close()
	base, err := rc.memory(ctx)
	if err != nil {
		return nil, err
	}
	res.UsedMemoryBaseline = base.Used
	if rep.RedisVersion == "" {
		rep.RedisVersion, rep.RedisAllocator = rc.version(ctx), base.Allocator
	}

	yml := fmt.Sprintf("name: capacity-%s\n%ssources: [{name: cdc, type: file, path: %q, tables: {users: left, domains: right}}]\n"+
		"sinks: [{type: stdout, format: changelog}]\ncluster: {profile: local}\nstate: {store: redis, redis: {addr: %q}}\n",
		v.Name, jobYAML, inPath, addr)
	spec, err := job.Parse([]byte(yml))
	if err != nil {
		return nil, fmt.Errorf("job: %w\n%s", err, yml)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	n, err := node.Start(ctx, spec, node.Options{Logger: log, Stdout: io.Discard, Stdin: strings.NewReader("")})
	if err != nil {
		return nil, fmt.Errorf("node start: %w", err)
	}
	defer n.Close(context.Background())
	heap0 := liveHeap()
	t0 = time.Now()
	if err := n.Run(ctx); err != nil {
		return nil, fmt.Errorf("node run: %w", err)
	}
	res.RunSec = time.Since(t0).Seconds()
	heap1 := liveHeap()
	st := n.Stats()
	res.LiveKeys = st.ActiveKeys()
	res.HeapBytes = int64(heap1) - int64(heap0)
	if res.LiveKeys > 0 {
		res.HeapPerLiveKey = float64(res.HeapBytes) / float64(res.LiveKeys)
	}
	res.Read, res.Outputs, res.Rejected = st.In.Load(), st.Out.Load(), st.BadTotal()
	if err := n.Close(ctx); err != nil {
		return nil, fmt.Errorf("node close: %w", err)
	}
	res.Passivations = st.Passivations.Load()
	if res.Read != int64(res.Lines) || res.Rejected != 0 {
		return nil, fmt.Errorf("the node read %d of %d changes and rejected %d", res.Read, res.Lines, res.Rejected)
	}
	fmt.Fprintf(c.Log, "capacity %s: node read %d changes in %.1f s, %d outputs, %d keys live at the end\n",
		v.Name, res.Read, res.RunSec, res.Outputs, res.LiveKeys)

	after, err := rc.memory(ctx)
	if err != nil {
		return nil, err
	}
	res.UsedMemory = after.Used
	res.UsedMemoryDelta = after.Used - base.Used
	if res.JoinKeys > 0 {
		res.BytesPerJoinKey = float64(res.UsedMemoryDelta) / float64(res.JoinKeys)
	}
	if res.StoredRows > 0 {
		res.BytesPerRow = float64(res.UsedMemoryDelta) / float64(res.StoredRows)
	}
	t0 = time.Now()
	if err := rc.survey(ctx, res); err != nil {
		return nil, err
	}
	if res.JoinKeys > 0 {
		res.RedisKeysPerJoinKey = float64(res.DBSize) / float64(res.JoinKeys)
	}
	fmt.Fprintf(c.Log, "capacity %s: %d Redis keys surveyed in %.1f s\n", v.Name, res.DBSize, time.Since(t0).Seconds())
	return res, nil
}

// liveHeap is the heap's live bytes after a full GC.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// generate writes c's history to path as Debezium lines and fills res's
// input figures from its final tables. The history is dropped when it
// returns, so that the heap figures do not count it.
func generate(c cdcgen.Config, path string, res *Result) error {
	h := cdcgen.Generate(c)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for _, l := range h.Lines {
		w.Write(l)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	res.Lines = len(h.Lines)
	keys := map[int]bool{}
	for id, u := range h.Users {
		keys[id] = true
		res.WholeRowBytes += jsonLen(u)
		res.NeededBytes += jsonLen(map[string]any{"user_id": u["id"], "firstname": u["firstname"], "lastname": u["lastname"]})
	}
	for _, d := range h.Domains {
		keys[d["user_id"].(int)] = true
		res.WholeRowBytes += jsonLen(d)
		res.NeededBytes += jsonLen(map[string]any{"domain_name": d["domain_name"]})
	}
	res.Users, res.Domains = len(h.Users), len(h.Domains)
	res.StoredRows = res.Users + res.Domains
	res.JoinKeys = len(keys)
	if res.JoinKeys > 0 {
		res.NeededPerJoinKey = float64(res.NeededBytes) / float64(res.JoinKeys)
		res.WholeRowsPerJoinKey = float64(res.WholeRowBytes) / float64(res.JoinKeys)
	}
	return nil
}

func jsonLen(v any) int64 {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of ints and strings
	}
	return int64(len(b))
}
