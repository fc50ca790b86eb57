package testutil

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// AddMaster grows the cluster by one master, as an operator does with
// redis-cli: it starts a cluster-enabled redis-server, joins it empty
// (`redis-cli --cluster add-node`), waits until every node knows it, and
// moves it its share of the slots (`redis-cli --cluster rebalance
// --cluster-use-empty-masters`, which migrates them one at a time, key by
// key, while clients go on: they meet ASK, TRYAGAIN and MOVED). It returns
// the new master's index in Masters and how long the rebalance took. It
// fails the test on any error.
func (c *RedisCluster) AddMaster() (int, time.Duration) {
	c.t.Helper()
	r := startClusterNode(c.t)
	c.redisCli("add-node", r.Addr, c.Masters[0].Addr)
	c.Masters = append(c.Masters, r)
	ctx := context.Background()
	// rebalance refuses a node that not every node has met yet.
	WaitFor(c.t, 30*time.Second, func() error {
		for _, m := range c.Masters {
			cl := node(m.Addr)
			nodes, err := cl.ClusterNodes(ctx).Result()
			_ = cl.Close()
			if err != nil {
				return err
			}
			if n := strings.Count(nodes, "master"); n < len(c.Masters) || strings.Contains(nodes, "handshake") {
				return fmt.Errorf("%s knows %d masters of %d:\n%s", m.Addr, n, len(c.Masters), nodes)
			}
		}
		return nil
	})
	// And until it reports the cluster ok: a MIGRATE to a node that does
	// not yet is answered CLUSTERDOWN.
	c.WaitOK()
	began := time.Now()
	c.redisCli("rebalance", c.Masters[0].Addr, "--cluster-use-empty-masters")
	took := time.Since(began)
	c.WaitOK()
	return len(c.Masters) - 1, took
}

// RemoveMaster shrinks the cluster by Masters[i], as an operator does:
// its slots move to the other masters (`redis-cli --cluster rebalance
// --cluster-weight <id>=0`, slot by slot, key by key, under the clients),
// then it leaves the cluster (`redis-cli --cluster del-node`, which makes
// the others forget it and resets it) and is stopped. It returns how long
// moving the slots took. It fails the test on any error.
func (c *RedisCluster) RemoveMaster(i int) time.Duration {
	c.t.Helper()
	r := c.Masters[i]
	cl := node(r.Addr)
	id, err := cl.Do(context.Background(), "CLUSTER", "MYID").Text()
	_ = cl.Close()
	if err != nil {
		c.t.Fatalf("CLUSTER MYID on %s: %v", r.Addr, err)
	}
	other := c.Masters[(i+1)%len(c.Masters)].Addr
	began := time.Now()
	c.redisCli("rebalance", other, "--cluster-weight", id+"=0")
	took := time.Since(began)
	c.redisCli("del-node", other, id)
	c.Masters = slices.Delete(c.Masters, i, i+1)
	r.Stop()
	c.WaitOK()
	return took
}

// SlotsOf returns how many slots Masters[i] serves.
func (c *RedisCluster) SlotsOf(i int) int {
	c.t.Helper()
	cl := node(c.Masters[0].Addr)
	defer cl.Close()
	slots, err := cl.ClusterSlots(context.Background()).Result()
	if err != nil {
		c.t.Fatalf("CLUSTER SLOTS: %v", err)
	}
	n := 0
	for _, r := range slotOwners(slots) {
		if r.addr == c.Masters[i].Addr {
			n += r.end - r.start + 1
		}
	}
	return n
}

// redisCli runs `redis-cli --cluster <args> --cluster-yes`.
func (c *RedisCluster) redisCli(args ...string) {
	c.t.Helper()
	full := append([]string{"--cluster"}, args...)
	full = append(full, "--cluster-yes")
	out, err := exec.Command("redis-cli", full...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("redis-cli %s: %v\n%s", strings.Join(full, " "), err, out)
	}
}
