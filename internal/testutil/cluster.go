package testutil

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCluster is a Redis Cluster, each node a redis-server process owned
// by a test: masters and, when started with replicas, one replica each.
type RedisCluster struct {
	Masters []*Redis
	// Replicas[i] is the replica of Masters[i] (StartRedisClusterReplicas;
	// empty without replicas).
	Replicas []*Redis
	t        testing.TB
}

// StartRedisCluster starts n redis-server processes (Redis 7 or later)
// with cluster mode on, on free loopback ports (the cluster bus too, by
// cluster-port), each with its data and nodes.conf in a fresh
// temporary directory; joins them with `redis-cli --cluster create
// --cluster-replicas 0` (slots split evenly, in address order); waits
// until every node reports cluster_state:ok with all 16384 slots assigned;
// and stops them when the test ends. A missing redis-server or redis-cli
// fails the test (it never skips): Debian's redis-server package brings
// both (redis-cli is in redis-tools, a dependency), or run `make test`.
func StartRedisCluster(t testing.TB, n int) *RedisCluster {
	t.Helper()
	return startCluster(t, n, 0)
}

// StartRedisClusterReplicas is StartRedisCluster with one replica per
// master (`--cluster-replicas 1`): 2n processes, Replicas[i] the replica
// of Masters[i]. It returns once every replica has finished its first
// sync. The replicas never fail over by themselves
// (cluster-replica-no-failover): a test promotes one with Failover, so the
// moment and the replica are the test's.
func StartRedisClusterReplicas(t testing.TB, n int) *RedisCluster {
	t.Helper()
	return startCluster(t, n, 1)
}

func startCluster(t testing.TB, n, replicas int) *RedisCluster {
	t.Helper()
	masters, reps, err := LaunchRedisCluster(context.Background(), RedisConfig{Dir: t.TempDir()}, n, replicas)
	if err != nil {
		t.Fatal(err)
	}
	c := &RedisCluster{t: t}
	for _, s := range append(masters, reps...) {
		t.Cleanup(s.Stop)
	}
	for _, m := range masters {
		c.Masters = append(c.Masters, &Redis{RedisServer: m, t: t})
	}
	for _, r := range reps {
		c.Replicas = append(c.Replicas, &Redis{RedisServer: r, t: t})
	}
	return c
}

// LaunchRedisCluster starts n×(1+replicas) redis-server processes (Redis 7
// or later) with cluster mode on, on free loopback ports (the cluster bus
// too, by cluster-port), each as base says in its own subdirectory of
// base.Dir (redis1, redis2, …); joins them with `redis-cli --cluster
// create --cluster-replicas replicas` (slots split evenly, in address
// order); and returns once every replica has finished its first sync and
// every master reports cluster_state:ok with all 16384 slots assigned and
// the same slot map. replicaServers[i] is the replica of masters[i]. The
// replicas never fail over by themselves (cluster-replica-no-failover).
// The caller stops the servers; on an error none is left running.
func LaunchRedisCluster(ctx context.Context, base RedisConfig, n, replicas int) (masters, replicaServers []*RedisServer, err error) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		return nil, nil, fmt.Errorf("redis-cli not found in PATH: install it (Debian: apt-get install redis-tools, which redis-server brings) or run `make redis`: %w", err)
	}
	var all []*RedisServer
	defer func() {
		if err != nil {
			for _, s := range all {
				s.Stop()
			}
		}
	}()
	for i := range n * (1 + replicas) {
		// The cluster bus gets a free port of its own (cluster-port, Redis
		// 7): the default, port+10000, may be taken or beyond 65535.
		bus, err := PickPort()
		if err != nil {
			return nil, nil, err
		}
		cfg := base
		cfg.Dir = filepath.Join(base.Dir, fmt.Sprintf("redis%d", i+1))
		cfg.Args = append(clusterNodeArgs(bus), base.Args...)
		s, err := LaunchRedis(cfg)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, s)
	}
	args := []string{"--cluster", "create"}
	for _, s := range all {
		args = append(args, s.Addr)
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput()
	if err != nil {
		return nil, nil, fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	if replicas == 0 {
		masters = all
	} else if masters, replicaServers, err = pairReplicas(ctx, all); err != nil {
		return nil, nil, err
	}
	if len(masters) != n || len(replicaServers) != n*replicas {
		return nil, nil, fmt.Errorf("redis-cli --cluster create made %d masters and %d replicas of %d processes, want %d and %d:\n%s", len(masters), len(replicaServers), len(all), n, n*replicas, out)
	}
	if err = waitClusterOK(ctx, serverAddrs(masters)); err != nil {
		return nil, nil, err
	}
	return masters, replicaServers, nil
}

// pairReplicas reads back which of all redis-cli made masters and which
// replicas, once every replica finished its first sync: the masters, and
// the replicas in their masters' order.
func pairReplicas(ctx context.Context, all []*RedisServer) (masters, replicas []*RedisServer, err error) {
	masterOf := map[string]string{} // replica address -> its master's
	err = Poll(ctx, 30*time.Second, 20*time.Millisecond, "the replicas' first sync", func() error {
		for _, r := range all {
			if _, ok := masterOf[r.Addr]; ok {
				continue
			}
			cl := node(r.Addr)
			info, err := cl.Info(ctx, "replication").Result()
			_ = cl.Close()
			if err != nil {
				return err
			}
			switch infoField(info, "role") {
			case "master":
				masterOf[r.Addr] = ""
			case "slave":
				if infoField(info, "master_link_status") != "up" || infoField(info, "master_sync_in_progress") != "0" {
					return fmt.Errorf("replica %s not in sync yet", r.Addr)
				}
				masterOf[r.Addr] = net.JoinHostPort(infoField(info, "master_host"), infoField(info, "master_port"))
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for _, r := range all {
		if masterOf[r.Addr] == "" {
			masters = append(masters, r)
		}
	}
	for _, m := range masters {
		for _, r := range all {
			if masterOf[r.Addr] == m.Addr {
				replicas = append(replicas, r)
			}
		}
	}
	return masters, replicas, nil
}

func serverAddrs(ss []*RedisServer) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Addr)
	}
	return out
}

// infoField is one field of an INFO reply ("" when absent).
func infoField(info, name string) string {
	for l := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+":"); ok {
			return v
		}
	}
	return ""
}

// Addrs returns the masters' host:port.
func (c *RedisCluster) Addrs() []string {
	var out []string
	for _, m := range c.Masters {
		out = append(out, m.Addr)
	}
	return out
}

// node returns a plain client of one master (not following redirections);
// the caller closes it.
func node(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
}

// WaitOK waits until every master reports cluster_state:ok with all slots
// assigned and agrees with the others on who owns every slot.
func (c *RedisCluster) WaitOK() {
	c.t.Helper()
	if err := waitClusterOK(context.Background(), c.Addrs()); err != nil {
		c.t.Fatal(err)
	}
}

// waitClusterOK waits (at most 30 s) until every master of addrs reports
// cluster_state:ok with all slots assigned and agrees with the others on
// who owns every slot.
func waitClusterOK(ctx context.Context, addrs []string) error {
	return Poll(ctx, 30*time.Second, 20*time.Millisecond, "redis cluster state ok", func() error {
		var first string
		for i, a := range addrs {
			cl := node(a)
			info, err := cl.ClusterInfo(ctx).Result()
			if err == nil && (!strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_assigned:16384")) {
				err = fmt.Errorf("%s: cluster not ready:\n%s", a, info)
			}
			var slots []redis.ClusterSlot
			if err == nil {
				slots, err = cl.ClusterSlots(ctx).Result()
			}
			_ = cl.Close()
			if err != nil {
				return err
			}
			view := fmt.Sprint(slotOwners(slots))
			if i == 0 {
				first = view
			} else if view != first {
				return fmt.Errorf("%s sees slots %s, %s sees %s", addrs[0], first, a, view)
			}
		}
		return nil
	})
}

type slotRange struct {
	start, end int
	addr       string
}

func slotOwners(slots []redis.ClusterSlot) []slotRange {
	var out []slotRange
	for _, s := range slots {
		if len(s.Nodes) > 0 {
			out = append(out, slotRange{s.Start, s.End, s.Nodes[0].Addr})
		}
	}
	// CLUSTER SLOTS lists ranges in no fixed order.
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j].start < out[i].start {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// Owner returns the index in Masters of the master that serves slot,
// as the first master sees it.
func (c *RedisCluster) Owner(slot int) int {
	c.t.Helper()
	cl := node(c.Masters[0].Addr)
	defer cl.Close()
	slots, err := cl.ClusterSlots(context.Background()).Result()
	if err != nil {
		c.t.Fatalf("CLUSTER SLOTS: %v", err)
	}
	for _, r := range slotOwners(slots) {
		if slot >= r.start && slot <= r.end {
			for i, m := range c.Masters {
				if m.Addr == r.addr {
					return i
				}
			}
		}
	}
	c.t.Fatalf("slot %d has no owner among %v", slot, c.Addrs())
	return -1
}

// MigrateSlot moves slot from its owner to master to, the way
// `redis-cli --cluster reshard` does: CLUSTER SETSLOT IMPORTING on the
// target and MIGRATING on the source, then MIGRATE of the slot's keys in
// batches of batch keys, calling between(i) after batch i (so a test can
// let writes run in the middle), then CLUSTER SETSLOT NODE on every
// master. Clients meanwhile get ASK (and TRYAGAIN for multi-key commands
// over a half-moved slot) and, after, MOVED. It returns the number of keys
// moved. It fails the test on any error.
func (c *RedisCluster) MigrateSlot(slot, to, batch int, between func(i int)) int {
	c.t.Helper()
	ctx := context.Background()
	from := c.Owner(slot)
	if from == to {
		c.t.Fatalf("slot %d is already on master %d", slot, to)
	}
	src, dst := node(c.Masters[from].Addr), node(c.Masters[to].Addr)
	defer src.Close()
	defer dst.Close()
	must := func(what string, err error) {
		c.t.Helper()
		if err != nil {
			c.t.Fatalf("migrate slot %d from %s to %s: %s: %v", slot, c.Masters[from].Addr, c.Masters[to].Addr, what, err)
		}
	}
	srcID, err := src.Do(ctx, "CLUSTER", "MYID").Text()
	must("CLUSTER MYID", err)
	dstID, err := dst.Do(ctx, "CLUSTER", "MYID").Text()
	must("CLUSTER MYID", err)
	must("SETSLOT IMPORTING", dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err())
	must("SETSLOT MIGRATING", src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err())
	host, port, _ := net.SplitHostPort(c.Masters[to].Addr)
	moved := 0
	for i := 0; ; i++ {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, batch).Result()
		must("GETKEYSINSLOT", err)
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		must("MIGRATE", src.Do(ctx, args...).Err())
		moved += len(keys)
		if between != nil {
			between(i)
		}
	}
	// The target first, as redis-cli does: once the source gives the slot
	// up, its clients are sent to a target that already owns it.
	must("SETSLOT NODE (target)", dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())
	must("SETSLOT NODE (source)", src.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())
	for i, m := range c.Masters {
		if i == from || i == to {
			continue
		}
		cl := node(m.Addr)
		err := cl.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err()
		_ = cl.Close()
		must("SETSLOT NODE "+strconv.Itoa(i), err)
	}
	c.WaitOK()
	return moved
}

// CountKeys returns, per master, the number of keys matching pattern (a
// SCAN MATCH pattern).
func (c *RedisCluster) CountKeys(pattern string) []int {
	c.t.Helper()
	ctx := context.Background()
	out := make([]int, len(c.Masters))
	for i, m := range c.Masters {
		cl := node(m.Addr)
		iter := cl.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			out[i]++
		}
		err := iter.Err()
		_ = cl.Close()
		if err != nil {
			c.t.Fatalf("SCAN %s on %s: %v", pattern, m.Addr, err)
		}
	}
	return out
}

// Save runs SAVE on every master: each writes its dump (dump.rdb in its
// directory), a point-in-time copy its restart loads.
func (c *RedisCluster) Save() {
	c.t.Helper()
	for _, m := range c.Masters {
		cl := node(m.Addr)
		err := cl.Save(context.Background()).Err()
		_ = cl.Close()
		if err != nil {
			c.t.Fatalf("SAVE on %s: %v", m.Addr, err)
		}
	}
}

// Restart kills the masters (SIGKILL), starts them again on the same
// ports and directories, so each loads its last dump and its nodes.conf,
// and waits until the cluster is ok. Without AOF (the default here) each
// master goes back to its last Save: a cluster restored from older
// snapshots.
func (c *RedisCluster) Restart() {
	c.t.Helper()
	for _, m := range c.Masters {
		m.Kill()
	}
	for _, m := range c.Masters {
		m.Start()
	}
	c.WaitOK()
}

// Failover promotes Replicas[i] with CLUSTER FAILOVER TAKEOVER, sent to
// the replica: it takes its master's slots without the master's or the
// other masters' agreement, as an operator does when the master is gone,
// and with whatever data it has (a replica that lagged loses the writes it
// lacked). It waits until the replica reports itself a master and the
// live masters agree on the slot map, then swaps Masters[i] and
// Replicas[i], so Masters are the masters again (the old one, dead or
// not, is Replicas[i]).
func (c *RedisCluster) Failover(i int) {
	c.t.Helper()
	ctx := context.Background()
	r := c.Replicas[i]
	cl := node(r.Addr)
	defer cl.Close()
	if err := cl.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		c.t.Fatalf("CLUSTER FAILOVER TAKEOVER on %s: %v", r.Addr, err)
	}
	WaitFor(c.t, 30*time.Second, func() error {
		info, err := cl.Info(ctx, "replication").Result()
		if err == nil && infoField(info, "role") != "master" {
			err = fmt.Errorf("%s is still a replica", r.Addr)
		}
		return err
	})
	c.Masters[i], c.Replicas[i] = r, c.Masters[i]
	c.WaitOK()
}

// clusterNodeArgs are the options of a redis-server in a test cluster,
// its cluster bus on port bus (cluster-port, Redis 7: the default,
// port+10000, may be taken or beyond 65535).
func clusterNodeArgs(bus int) []string {
	return []string{"--cluster-enabled", "yes",
		"--cluster-port", strconv.Itoa(bus),
		"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000",
		"--cluster-replica-no-failover", "yes",
		// A replica's first sync starts at once, not after the
		// default 5 s wait for more replicas to share it.
		"--repl-diskless-sync-delay", "0"}
}

// startClusterNode starts one redis-server with cluster mode on, in no
// cluster yet (RedisCluster.AddMaster), stopped with the test.
func startClusterNode(t testing.TB) *Redis {
	t.Helper()
	return StartRedis(t, clusterNodeArgs(FreePort(t))...)
}
