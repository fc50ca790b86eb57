package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/cluster"
	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/node"
	"github.com/joinery/joinery/sources/redisstream"
)

// The stream systems (SysNodeStreams, SysNode3Streams) run the
// co-partitioned deployment of docs/guides/producers.md: each table's input
// is written, before the nodes start, to streamShards shard streams as a
// producer that partitions by the join key writes them (cdcgen.ByJoinKey:
// every change to the shard of its row's join key, streamshard.Of of the
// key as a JSON array, i.e. its key group; a change that moves a row to
// another join key becomes a delete in the old key's shard and a create in
// the new one's), and every node runs the same job: one sharded
// redis-stream source per table with partitioned_by: join_key, state on
// the same Redis, its own changelog file sink. Each node reads the shards
// whose key groups it hosts, so an event reaches its key actor without a
// network hop; node+streams is the same job on one node, which reads every
// shard, so the two differ by the fleet alone.
const (
	streamShards = 12      // per table: 4 per node on three nodes
	streamGroup  = "bench" // every source's consumer group
)

// streamsSkip is why the stream systems do not run a workload whose node
// input is event-time side files (Workload.NodeSources).
const streamsSkip = "not wired: the stream systems shard one Debezium input's tables by their join_on columns " +
	"(newStreamInput, cdcgen.ByJoinKey); an event-time join's node input is plain JSON side files with watermarks, " +
	"which would need sharding by key and a watermark per shard stream"

// streamTable is one table of a workload's join as shard streams: the
// stream base name (the table's), the join side and column, and the
// lines of each shard in input order.
type streamTable struct {
	name, side, col string
	shards          [][][]byte
}

// streamInput is a workload's node input as shard streams, one set per
// table of its join; entries counts them all (a move is two).
type streamInput struct {
	tables  []streamTable
	entries int
}

// newStreamInput shards lines (w's node input) by their join key over
// shards shard streams per table of w's join.
func newStreamInput(w *Workload, lines [][]byte, shards int) (*streamInput, error) {
	spec, err := nodeSpec(w, "streams", "", "", "", "", "")
	if err != nil {
		return nil, err
	}
	l, r := spec.Join.Left, spec.Join.Right
	if l.JoinOn == "" || r.JoinOn == "" {
		return nil, fmt.Errorf("%s: the stream systems need a join column on both sides (join_on)", w.Name)
	}
	in := &streamInput{tables: []streamTable{
		{name: l.Name, side: "left", col: l.JoinOn, shards: make([][][]byte, shards)},
		{name: r.Name, side: "right", col: r.JoinOn, shards: make([][][]byte, shards)},
	}}
	keyed, err := cdcgen.ByJoinKey(lines, map[string]string{l.Name: l.JoinOn, r.Name: r.JoinOn})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.Name, err)
	}
	for _, k := range keyed {
		table := tableOf(k.Line)
		i := 0
		for i < len(in.tables) && in.tables[i].name != table {
			i++
		}
		if i == len(in.tables) {
			return nil, fmt.Errorf("%s: a line of table %q, not %s or %s: %s", w.Name, table, l.Name, r.Name, k.Line)
		}
		g := streamshard.Of(k.Key, shards)
		in.tables[i].shards[g] = append(in.tables[i].shards[g], k.Line)
		in.entries++
	}
	return in, nil
}

// feed appends every table's lines to its shard streams (field "value",
// pipelines of 1000 XADDs), leaving out shard drop of every table (-1:
// none; tests check that a result missing its keys does not verify).
func (in *streamInput) feed(ctx context.Context, rdb *goredis.Client, drop int) error {
	for _, t := range in.tables {
		for i, lines := range t.shards {
			if i == drop {
				continue
			}
			for len(lines) > 0 {
				n := min(len(lines), 1000)
				p := rdb.Pipeline()
				for _, l := range lines[:n] {
					p.XAdd(ctx, &goredis.XAddArgs{Stream: streamshard.Stream(t.name, i), Values: []any{streamshard.ValueField, l}})
				}
				if _, err := p.Exec(ctx); err != nil {
					return fmt.Errorf("XADD to %s: %w", streamshard.Stream(t.name, i), err)
				}
				lines = lines[n:]
			}
		}
	}
	return nil
}

// sources is the sources: section of a node's job on the shard streams
// at addr.
func (in *streamInput) sources(addr string) string {
	s := "sources:\n"
	for _, t := range in.tables {
		s += fmt.Sprintf("  - {name: %s, type: redis-stream, side: %s, redis: {addr: %q}, stream: %s, shards: %d, partitioned_by: join_key, group: %s}\n",
			t.name, t.side, addr, t.name, len(t.shards), streamGroup)
	}
	return s
}

// register announces names as readers of every table's shard streams for
// a minute, in the sorted set where the sharded sources register (member
// -> until when, Redis's clock in ms: redisstream.ReadersKey), so that
// each node's first assignment already spreads the shards over all of
// them. Otherwise the first node to run would find itself the only
// reader, take every shard and read the backlog, sending its events to
// key actors on the other nodes, until the others' registrations reach it
// a third of a lease later and it hands their shards over: a start-up
// transient, not the steady state this row measures. The nodes renew
// their own registration from then on.
func (in *streamInput) register(ctx context.Context, rdb *goredis.Client, names []string) error {
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		return err
	}
	until := float64(now.UnixMilli() + time.Minute.Milliseconds())
	zs := make([]goredis.Z, len(names))
	for i, n := range names {
		zs[i] = goredis.Z{Score: until, Member: n}
	}
	for _, t := range in.tables {
		if err := rdb.ZAdd(ctx, redisstream.ReadersKey(t.name, streamGroup), zs...).Err(); err != nil {
			return fmt.Errorf("register the readers of %s: %w", t.name, err)
		}
	}
	return nil
}

// acked is nil once every entry of every shard stream was delivered to
// the group and acknowledged (the sources acknowledge what they commit:
// its state written, its outputs in the sink), else an error saying what
// is left.
func (in *streamInput) acked(ctx context.Context, rdb *goredis.Client) error {
	p := rdb.Pipeline()
	var cmds []*goredis.XInfoGroupsCmd
	var names []string
	for _, t := range in.tables {
		for i := range t.shards {
			names = append(names, streamshard.Stream(t.name, i))
			cmds = append(cmds, p.XInfoGroups(ctx, names[len(names)-1]))
		}
	}
	_, _ = p.Exec(ctx) // each command's error is its own
	var lag, pending int64
	for k, c := range cmds {
		gs, err := c.Result()
		if err != nil {
			return fmt.Errorf("groups of %s: %w", names[k], err)
		}
		found := false
		for _, g := range gs {
			if g.Name == streamGroup {
				found = true
				lag, pending = lag+g.Lag, pending+g.Pending
			}
		}
		if !found {
			return fmt.Errorf("%s has no group %s yet", names[k], streamGroup)
		}
	}
	if lag > 0 || pending > 0 {
		return fmt.Errorf("%d entries not read, %d read and not acknowledged", lag, pending)
	}
	return nil
}

// streamsRun runs nodes nodes (n1 … nN) of w's job in-process on the
// Redis rs: the server is emptied and fed in (leaving out shard drop,
// -1: none), the nodes start and see each other, their readers are
// registered (streamInput.register); then the measured part — their Run
// until every entry is acknowledged, then their Close (the flush of
// pending state writes) — whose CPU time (this process's: every node's,
// plus redis-server's, as node+redis counts it) and wall time (Run until
// the last acknowledgement) the result carries, so that starting the
// nodes and reading the sinks back are left out. Each node writes its
// own changelog file; the result's checksum is their union's, which needs
// no order across the files: the checksum is a signed sum over outputs
// (the final table's digest), and the outputs of one key come from the
// one node that hosts it, in its order.
func streamsRun(ctx context.Context, w *Workload, dir string, in *streamInput, rs *redisServer, run, nodes, drop int) (RunResult, error) {
	name := fmt.Sprintf("bench-%s-%d", strings.ReplaceAll(w.Name, "-", ""), run)
	if err := rs.Flush(); err != nil {
		return RunResult{}, err
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: rs.Addr})
	defer rdb.Close()
	if err := in.feed(ctx, rdb, drop); err != nil {
		return RunResult{}, err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	ns := make([]*node.Node, nodes)
	names, outs := make([]string, nodes), make([]string, nodes)
	defer func() {
		for _, n := range ns {
			if n != nil {
				n.Close(context.Background())
			}
		}
		for _, p := range outs {
			os.Remove(p)
		}
	}()
	seeds := ""
	for i := range ns {
		names[i] = fmt.Sprintf("n%d", i+1)
		outs[i] = filepath.Join(dir, name+"."+names[i]+".out.jsonl")
		spec, err := jobSpec(w, name, in.sources(rs.Addr), fmt.Sprintf("{type: file, path: %q, format: changelog}", outs[i]), rs.Addr, "", names[i], seeds)
		if err != nil {
			return RunResult{}, err
		}
		if ns[i], err = node.Start(ctx, spec, node.Options{Logger: log, Stdout: io.Discard, Stdin: strings.NewReader("")}); err != nil {
			return RunResult{}, fmt.Errorf("%s start: %w", names[i], err)
		}
		if seeds == "" {
			seeds = ns[i].GossipAddr()
		}
	}
	for _, n := range ns {
		for deadline := time.Now().Add(30 * time.Second); alive(n) < nodes; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				return RunResult{}, fmt.Errorf("a node sees %d of %d nodes alive", alive(n), nodes)
			}
		}
	}
	if err := in.register(ctx, rdb, names); err != nil {
		return RunResult{}, err
	}
	var res RunResult
	c0, err := rs.counters()
	if err != nil {
		return res, err
	}
	cpu0, rcpu0, t0 := cpuNow(), rs.CPU(), time.Now()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, nodes)
	for i, n := range ns {
		go func() {
			err := n.Run(runCtx)
			if errors.Is(err, context.Canceled) && runCtx.Err() != nil {
				err = nil
			}
			if err != nil {
				err = fmt.Errorf("%s run: %w", names[i], err)
			}
			errs <- err
		}()
	}
	ran := 0 // Runs returned
	var runErr error
	for deadline := time.Now().Add(10 * time.Minute); ; {
		if in.acked(ctx, rdb) == nil {
			break
		}
		if time.Now().After(deadline) {
			runErr = fmt.Errorf("not every entry acknowledged after 10 minutes: %v", in.acked(ctx, rdb))
			break
		}
		select {
		case err := <-errs:
			ran++
			runErr = err
			if err == nil {
				runErr = errors.New("a node's Run returned before every entry was acknowledged")
			}
		case <-time.After(20 * time.Millisecond):
		}
		if runErr != nil {
			break
		}
	}
	res.Wall = time.Since(t0)
	c1, cerr := rs.counters()
	cancel()
	for ; ran < nodes; ran++ {
		runErr = errors.Join(runErr, <-errs)
	}
	var wg sync.WaitGroup
	closeErrs := make([]error, nodes)
	for i, n := range ns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			closeErrs[i] = n.Close(ctx)
		}()
	}
	wg.Wait()
	res.CPU = cpuNow() - cpu0 + rs.CPU() - rcpu0
	if err := errors.Join(append([]error{runErr, cerr}, closeErrs...)...); err != nil {
		return res, err
	}
	res.RedisInBytes, res.RDBSaves = c1.inBytes-c0.inBytes, c1.saves-c0.saves
	for i, n := range ns {
		one, err := checksumFile(outs[i], true)
		if err != nil {
			return res, fmt.Errorf("%s: %w", names[i], err)
		}
		res.Check.Merge(one.Check)
		res.OutputsPerNode = append(res.OutputsPerNode, one.Check.Outs)
		res.Rejected += int(n.Stats().BadTotal())
		local, remote := keyRequests(n)
		res.LocalRequests += local
		res.RemoteRequests += remote
	}
	return res, nil
}

// alive is how many members n sees alive (clients aside), itself included.
func alive(n *node.Node) int {
	c := 0
	for _, m := range n.Members() {
		if m.Status == cluster.StatusAlive && !m.Client {
			c++
		}
	}
	return c
}

// keyRequests is n's joinery_key_requests_total, the requests its readers
// sent key actors on this node (local) and on another (remote).
func keyRequests(n *node.Node) (local, remote int64) {
	rec := httptest.NewRecorder()
	n.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if !strings.HasPrefix(l, "joinery_key_requests_total{") {
			continue
		}
		f := strings.Fields(l)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		switch {
		case strings.Contains(l, `where="local"`):
			local += int64(v)
		case strings.Contains(l, `where="remote"`):
			remote += int64(v)
		}
	}
	return local, remote
}

// keyRequestsOf collects the runs' key requests.
type keyRequestsOf struct{ local, remote []float64 }

func (k *keyRequestsOf) add(res RunResult) {
	k.local, k.remote = append(k.local, float64(res.LocalRequests)), append(k.remote, float64(res.RemoteRequests))
}

// median is the runs' medians, nil without runs.
func (k *keyRequestsOf) median() *KeyRequests {
	if len(k.local) == 0 {
		return nil
	}
	return &KeyRequests{Local: median(k.local), Remote: median(k.remote)}
}
